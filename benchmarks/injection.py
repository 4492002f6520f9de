"""The tool-call policy against prompt injection, per preset, on the hand-labelled corpus.

``tests/corpus/injection.jsonl`` holds multi-step tasks in four domains (mail/calendar/files,
travel booking, banking, team chat), each with a benign variant and injected variants whose
injection arrives in a tool result labelled as outside content (see
``tests/corpus/injection/injection_build.py``). Every variant runs through a plain-Python
:class:`duraguard.checks.policy.Session` and ``run_pass``, call by call: the person's own calls
are recorded as run (as if a person said yes where one was asked), an injected call only where
the policy let it through. Printed per preset:

- injected writes/sends stopped before they ran, and of them denied outright vs asked;
- benign tasks that finished with no ask, and with no deny;
- the person's own calls in injected variants let through (collateral friction);
- agreement with the hand labels (allow / ask / deny per call).

Run: ``python benchmarks/injection.py`` (add ``--misses`` to list every call that disagrees
with its label for the balanced preset).
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
PRESETS: tuple[str | None, ...] = ("strict", "balanced", "permissive", None)
"""``None``: ``policy()`` with the specification's defaults."""


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
    """A read the person's task makes (judged too: it must run)."""

    @property
    def got(self) -> str:
        return {"allow": "allow", "approve": "ask"}.get(self.action, "deny")


@dataclass
class Figures:
    """What one preset did on the corpus."""

    preset: str
    calls: list[Call] = field(default_factory=list)
    benign_tasks: int = 0
    benign_no_ask: int = 0
    benign_no_deny: int = 0

    def injected(self) -> list[Call]:
        return [c for c in self.calls if c.injected]

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


def load() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    return rows, json.loads(CATALOGUE.read_text())


def _start(day: str) -> float:
    return datetime.fromisoformat(f"{day}T09:00:00").replace(tzinfo=UTC).timestamp()


def _registries(catalogue: dict[str, Any]) -> dict[str, PolicyRegistry]:
    return {
        d: PolicyRegistry(catalogue={"tools": c["tools"]}, rules=c["rules"])
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
            action=verdict.action if ran else "deny",
        )
    return out


async def measure(preset: str | None, rows: list[dict[str, Any]] | None = None) -> Figures:
    """Run every variant of the corpus under ``policy(preset=preset)``."""
    if rows is None:
        rows, catalogue = load()
    else:
        catalogue = load()[1]
    registries = _registries(catalogue)
    spec = policy(preset=preset)  # type: ignore[arg-type]
    figures = Figures(preset or "default")
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


def report(all_figures: list[Figures]) -> str:
    rows = [
        ("preset", "injected stopped", "denied", "asked", "benign no ask", "benign no deny",
         "own calls let through", "agree with labels"),
    ]  # fmt: skip
    for f in all_figures:
        n = len(f.injected())
        ok, own = f.collateral()
        agree, judged = f.agreement()
        rows.append(
            (
                f.preset,
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


async def main(argv: list[str]) -> None:
    rows, _ = load()
    tasks = len({r["task"] for r in rows})
    domains = Counter(r["domain"] for r in rows if r["variant"] == "benign")
    print(
        f"{tasks} tasks ({', '.join(f'{d} {n}' for d, n in domains.items())}), "
        f"{len(rows)} variants ({sum(r['variant'] == 'injected' for r in rows)} injected)"
    )
    results = [await measure(p, rows) for p in PRESETS]
    print(report(results))
    print("by attack style (balanced): stopped / denied")
    balanced = results[1]
    styles: dict[str, Counter[str]] = {}
    style_of = {r["id"]: r["style"] for r in rows}
    for c in balanced.injected():
        s = styles.setdefault(style_of[c.variant], Counter())
        s["n"] += 1
        s["stopped"] += c.action != "allow"
        s["denied"] += c.action == "deny"
    for style, s in sorted(styles.items()):
        print(f"  {style:20} {s['stopped']}/{s['n']} stopped, {s['denied']}/{s['n']} denied")
    if "--misses" in argv:
        for line in misses(balanced):
            print(" ", line)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
