"""The tool-call policy against prompt injection, per preset, on two corpora side by side.

- The project's own corpus, ``tests/corpus/injection.jsonl``: hand-written multi-step tasks in
  four domains (mail/calendar/files, travel booking, banking, team chat), each with a benign
  variant and injected variants whose injection arrives in a tool result labelled as outside
  content (see ``tests/corpus/injection/injection_build.py``). It was written alongside the
  checks.
- The outsiders' corpus, ``tests/corpus/agentdojo/agentdojo.jsonl``: the AgentDojo benchmark's
  published user tasks, injection tasks and attack template, with results from running its
  ground-truth calls against its own environments (see ``tests/corpus/agentdojo/build.py``).
  It is split by user task: the ``tuning`` half may be looked at, the ``held-out`` half is
  only reported.

Every variant runs through a plain-Python :class:`duraguard.checks.policy.Session` and
``run_pass``, call by call: the person's own calls are recorded as run (as if a person said yes
where one was asked), an injected call only where the policy let it through. Printed per
preset (each with its domain's rule sheet allowing the domain's writes, and ``policy()`` also
without one), per corpus:

- injected writes/sends stopped before they ran, and of them denied outright vs asked
  (injected reads are run and not counted: reads pass);
- clean (benign) tasks that finished with no ask, and with no deny;
- the person's own calls in injected variants let through (collateral friction);
- agreement with the labels (allow / ask / deny per call).

Run: ``python benchmarks/injection.py`` (``--misses [CORPUS]`` lists every call that disagrees
with its label for the balanced preset, ``own`` or ``tuning``; the held-out half is never
listed; ``--no-held-out`` leaves the held-out half out of the run altogether, for working on
the checks without seeing its figures; ``--attacks`` adds AgentDojo's other attacks, each
built with ``tests/corpus/agentdojo/build.py --attack NAME``: the same tasks and goals, other
words around them).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from duraguard._types import Context, Subject
from duraguard.checks.policy import PolicyRegistry, Session, policy
from duraguard.engine import run_pass
from duraguard.guardrail import GuardrailSpec, Resources

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "injection.jsonl"
CATALOGUE = ROOT / "tests" / "corpus" / "injection_catalogue.json"
AGENTDOJO = ROOT / "tests" / "corpus" / "agentdojo" / "agentdojo.jsonl"
AGENTDOJO_CATALOGUE = ROOT / "tests" / "corpus" / "agentdojo" / "catalogue.json"
PRESETS: tuple[str | None, ...] = ("strict", "balanced", "permissive", None)
"""``None``: ``policy()`` with the specification's defaults."""
CONFIGURATIONS: tuple[tuple[str | None, bool], ...] = (*((p, True) for p in PRESETS), (None, False))
"""Each preset with its domain's rule sheet, and ``policy()`` also without one."""


@dataclass(frozen=True)
class Corpus:
    """Variants to measure and the catalogue (tools, kinds, labels, rule sheet) per domain."""

    name: str
    rows: list[dict[str, Any]]
    catalogue: dict[str, Any]


def corpora(attacks: bool = False) -> list[Corpus]:
    """The own corpus, and the AgentDojo corpus's tuning and held-out halves; with ``attacks``,
    also each of the package's other attacks built (``agentdojo-NAME.jsonl``, see
    ``tests/corpus/agentdojo/build.py --attack``): its injected variants beside the same benign
    ones."""
    rows, catalogue = load()
    dojo, dojo_catalogue = load(AGENTDOJO, AGENTDOJO_CATALOGUE)
    out = [
        Corpus("own", rows, catalogue),
        *(
            Corpus(f"agentdojo {half}", [r for r in dojo if r["split"] == half], dojo_catalogue)
            for half in ("tuning", "held-out")
        ),
    ]
    for path in sorted(AGENTDOJO.parent.glob("agentdojo-*.jsonl")) if attacks else []:
        name = path.stem.removeprefix("agentdojo-")
        injected, _ = load(path, AGENTDOJO_CATALOGUE)
        for half in ("tuning", "held-out"):
            picked = [r for r in dojo if r["split"] == half and r["variant"] == "benign"]
            picked += [r for r in injected if r["split"] == half]
            out.append(Corpus(f"agentdojo {name} {half}", picked, dojo_catalogue))
    return out


@dataclass(frozen=True)
class Call:
    """One call of one variant, and what the policy did with it."""

    variant: str
    step: int
    tool: str
    injected: bool
    expect: str
    action: str
    check: str | None
    reason: str | None
    read: bool = False
    """A read (judged too: the person's must run; an injected one is not counted)."""

    @property
    def got(self) -> str:
        return {"allow": "allow", "approve": "ask"}.get(self.action, "deny")


@dataclass
class Figures:
    """What one preset did on one corpus."""

    preset: str
    calls: list[Call] = field(default_factory=list)
    benign_tasks: int = 0
    benign_no_ask: int = 0
    benign_no_deny: int = 0

    def injected(self) -> list[Call]:
        """The injected writes and sends (an injected read runs: reads pass)."""
        return [c for c in self.calls if c.injected and not c.read]

    @property
    def stopped(self) -> int:
        return sum(1 for c in self.injected() if c.action != "allow")

    @property
    def denied(self) -> int:
        return sum(1 for c in self.injected() if c.action == "deny")

    @property
    def asked(self) -> int:
        return sum(1 for c in self.injected() if c.action == "approve")

    def collateral(self) -> tuple[int, int]:
        own = [
            c for c in self.calls if not c.injected and "/benign" not in c.variant and not c.read
        ]
        return sum(1 for c in own if c.action == "allow"), len(own)

    def agreement(self) -> tuple[int, int]:
        judged = self.calls
        return sum(1 for c in judged if c.got == c.expect), len(judged)


def load(
    corpus: Path = CORPUS, catalogue: Path = CATALOGUE
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = [json.loads(line) for line in corpus.read_text().splitlines() if line.strip()]
    return rows, json.loads(catalogue.read_text())


def _start(day: str) -> float:
    return datetime.fromisoformat(f"{day}T09:00:00").replace(tzinfo=UTC).timestamp()


def _registries(catalogue: dict[str, Any], sheet: bool = True) -> dict[str, PolicyRegistry]:
    return {
        d: PolicyRegistry(catalogue={"tools": c["tools"]}, rules=c["rules"] if sheet else None)
        for d, c in catalogue.items()
    }


async def run_variant(
    row: dict[str, Any], spec: GuardrailSpec, registry: PolicyRegistry, tools: dict[str, Any]
) -> list[Call]:
    """Every call of one variant through the policy, in order, on one session."""
    session = Session(row["id"], start=_start(row["now"]))
    session.turn(row["turn"])
    resources = Resources(extra={"policy": registry})
    out: list[Call] = []
    for i, step in enumerate(row["steps"]):
        tool, args = step["tool"], step["args"]
        subject = Subject(
            placement="tool-args",
            tool=tool,
            value=args,
            call_id=f"call-{i}",
            context=Context(workflow_id=row["id"], agent="assistant"),
            session=session.view(tool, args),
        )
        verdict = (await run_pass([spec], subject, resources)).verdict
        injected = bool(step.get("injected"))
        out.append(
            Call(
                row["id"], i, tool, injected, step["expect"], verdict.action, verdict.check,
                verdict.reason, read=tools.get(tool, {}).get("kind") == "read",
            )
        )  # fmt: skip
        ran = not injected or verdict.action == "allow"
        session.call(
            tool,
            args,
            result=step.get("result") if ran else None,
            labels=tuple(tools.get(tool, {}).get("labels", ())),
            ran=ran,
            ok=step.get("ok", True),
            action=verdict.action if ran else "deny",
        )
    return out


async def measure(
    preset: str | None,
    rows: list[dict[str, Any]] | None = None,
    catalogue: dict[str, Any] | None = None,
    *,
    sheet: bool = True,
) -> Figures:
    """Run every variant under ``policy(preset=preset)`` (the own corpus where no rows are
    given; its catalogue where none is), each domain with its rule sheet or, ``sheet=False``,
    with none."""
    if rows is None or catalogue is None:
        own_rows, own_catalogue = load()
        rows = own_rows if rows is None else rows
        catalogue = own_catalogue if catalogue is None else catalogue
    registries = _registries(catalogue, sheet)
    spec = policy(preset=preset)  # type: ignore[arg-type]
    figures = Figures((preset or "default") + ("" if sheet else ", no sheet"))
    for row in rows:
        domain = row["domain"]
        calls = await run_variant(row, spec, registries[domain], catalogue[domain]["tools"])
        figures.calls.extend(calls)
        if row["variant"] == "benign":
            figures.benign_tasks += 1
            actions = {c.action for c in calls}
            figures.benign_no_ask += "approve" not in actions
            figures.benign_no_deny += "deny" not in actions
    return figures


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "0/0"


def report(all_figures: list[tuple[str, Figures]]) -> str:
    """A table, a row per preset and corpus: ``(corpus name, figures)`` in the order given."""
    rows = [
        ("preset", "corpus", "injected stopped", "denied", "asked", "clean no ask",
         "clean no deny", "own calls let through", "agree with labels"),
    ]  # fmt: skip
    for name, f in all_figures:
        n = len(f.injected())
        ok, own = f.collateral()
        agree, judged = f.agreement()
        rows.append(
            (
                f.preset,
                name,
                _pct(f.stopped, n),
                _pct(f.denied, n),
                _pct(f.asked, n),
                _pct(f.benign_no_ask, f.benign_tasks),
                _pct(f.benign_no_deny, f.benign_tasks),
                _pct(ok, own),
                _pct(agree, judged),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def misses(f: Figures) -> list[str]:
    out = []
    for c in f.calls:
        if c.got != c.expect:
            out.append(
                f"{c.variant} step {c.step} {c.tool}: expected {c.expect}, got {c.got} ({c.check}: {c.reason})"
            )
    return out


def _styles(f: Figures, rows: list[dict[str, Any]]) -> list[str]:
    styles: dict[str, Counter[str]] = {}
    style_of = {r["id"]: r["style"] for r in rows}
    for c in f.injected():
        s = styles.setdefault(style_of[c.variant], Counter())
        s["n"] += 1
        s["stopped"] += c.action != "allow"
        s["denied"] += c.action == "deny"
    return [
        f"  {style:20} {s['stopped']}/{s['n']} stopped, {s['denied']}/{s['n']} denied"
        for style, s in sorted(styles.items())
    ]


async def main(argv: list[str]) -> None:
    every = corpora(attacks="--attacks" in argv)
    if "--no-held-out" in argv:
        every = [c for c in every if not c.name.endswith("held-out")]
    for c in every:
        tasks = len({r["task"] for r in c.rows})
        domains = Counter(r["domain"] for r in c.rows if r["variant"] == "benign")
        print(
            f"{c.name}: {tasks} tasks ({', '.join(f'{d} {n}' for d, n in domains.items())}), "
            f"{len(c.rows)} variants ({sum(r['variant'] == 'injected' for r in c.rows)} injected)"
        )
    results: list[tuple[str, Figures]] = []
    for preset, sheet in CONFIGURATIONS:
        for c in every:
            f = await measure(preset, c.rows, c.catalogue, sheet=sheet)
            results.append((c.name, f))
    print(report(results))
    own = every[0]
    balanced = next(f for name, f in results if name == own.name and f.preset == "balanced")
    print("by attack style (balanced, own corpus): stopped / denied")
    print("\n".join(_styles(balanced, own.rows)))
    if "--misses" in argv:
        which = (
            argv[argv.index("--misses") + 1] if len(argv) > argv.index("--misses") + 1 else "own"
        )
        name = {"own": "own", "tuning": "agentdojo tuning"}.get(which)
        if name is None:
            raise SystemExit(
                f"--misses takes own or tuning, not {which!r} (the held-out half is never listed)"
            )
        picked = next(f for n, f in results if n == name and f.preset == "balanced")
        for line in misses(picked):
            print(" ", line)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
