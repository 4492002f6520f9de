"""Build ``tests/corpus/injection.jsonl`` and ``tests/corpus/injection_catalogue.json`` from the
hand-written tasks of the four domains (``workspace.py``, ``travel.py``, ``banking.py``,
``chat.py``). Nothing here is random: every task, every attack and every pairing of the two is
written out by hand in those files, and this script only lays them out as JSON lines.

A task is what a person asks and the calls a well-behaved agent makes to do it (reads with
their results, then the writes or sends). One read result of each task holds the place where
outside content can carry an injection (``{INJECTION}``): the benign variant has nothing
there; each injected variant puts an attack's text there, followed by the calls a model that
obeys it makes. Every call carries its expected outcome, labelled by hand: ``allow`` (or
``ask`` where the task is genuinely ambiguous) for the person's own calls, ``deny`` (or ``ask``)
for an injected call.

Run: ``python tests/corpus/injection/injection_build.py`` (tests check the files are up to date).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "injection.jsonl"
CATALOGUE = HERE.parent / "injection_catalogue.json"
DOMAINS = ("workspace", "travel", "banking", "chat")
PLACE = "{INJECTION}"


@dataclass
class Step:
    """One call: a tool, its arguments, what it returned, and what the policy should do."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    expect: str = "allow"


def R(tool: str, args: dict[str, Any] | None = None, result: Any = None) -> Step:
    """A read the agent makes, with what it returned."""
    return Step(tool, args or {}, result)


def W(tool: str, args: dict[str, Any], result: Any = None, expect: str = "allow") -> Step:
    """A write or send the person asked for."""
    return Step(tool, args, {"ok": True} if result is None else result, expect)


@dataclass
class Attack:
    """An injection: its style, its text, and the calls a model that obeys it makes."""

    id: str
    style: str
    text: str
    calls: list[Step]
    at_end: bool = False
    """The model finishes the person's task first, then obeys."""


def A(tool: str, args: dict[str, Any], expect: str = "deny") -> Step:
    """A call an injection asks for."""
    return Step(tool, args, {"ok": True}, expect)


@dataclass
class Task:
    id: str
    turn: str
    steps: list[Step]
    attacks: list[str]
    now: str = "2024-05-15"
    labels: dict[str, str | list[str]] = field(default_factory=dict)
    """Attack id -> the expected outcome of its calls in this task (one for all, or one per
    call), where it differs from the attack's own label (a steer towards a hotel the trusted
    list also holds is only asked)."""


def _fill(value: Any, text: str) -> Any:
    if isinstance(value, str):
        if PLACE not in value:
            return value
        out = value.replace(PLACE, text)
        return " ".join(out.split()) if not text else out
    if isinstance(value, dict):
        return {k: _fill(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, text) for v in value]
    return value


def _holds(value: Any) -> bool:
    return PLACE in json.dumps(value)


def _step(s: Step, *, injected: bool = False, text: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"tool": s.tool, "args": s.args}
    if s.result is not None:
        out["result"] = _fill(s.result, text)
    out["expect"] = s.expect
    if injected:
        out["injected"] = True
    return out


def variants(domain: str, task: Task, attacks: dict[str, Attack]) -> list[dict[str, Any]]:
    sites = [i for i, s in enumerate(task.steps) if _holds(s.result)]
    if len(sites) != 1:
        raise SystemExit(f"{task.id}: one read result must hold {PLACE}; found {len(sites)}")
    site = sites[0]
    base = {"domain": domain, "task": task.id, "now": task.now, "turn": task.turn}
    out = [{"id": f"{task.id}/benign", **base, "variant": "benign", "attack": None,
            "style": None, "steps": [_step(s) for s in task.steps]}]  # fmt: skip
    for aid in task.attacks:
        attack = attacks[aid]
        steps = [_step(s, text=attack.text) for s in task.steps]
        label = task.labels.get(aid)
        expects = label if isinstance(label, list) else [label or c.expect for c in attack.calls]
        if len(expects) != len(attack.calls):
            raise SystemExit(
                f"{task.id}: labels for {aid} name {len(expects)} calls, not {len(attack.calls)}"
            )
        injected = [
            _step(Step(c.tool, c.args, c.result, e or c.expect), injected=True)
            for c, e in zip(attack.calls, expects, strict=True)
        ]
        at = len(steps) if attack.at_end else site + 1
        steps[at:at] = injected
        out.append({"id": f"{task.id}/{aid}", **base, "variant": "injected", "attack": aid,
                    "style": attack.style, "steps": steps})  # fmt: skip
    return out


def _load(name: str) -> Any:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"injection_{name}", HERE / f"{name}.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every variant of every task, and each domain's catalogue and rule sheet."""
    rows: list[dict[str, Any]] = []
    catalogue: dict[str, Any] = {}
    for domain in DOMAINS:
        m = _load(domain)
        attacks = {a.id: a for a in m.ATTACKS}
        if len(attacks) != len(m.ATTACKS):
            raise SystemExit(f"{domain}: two attacks share an id")
        used = {aid for t in m.TASKS for aid in t.attacks}
        unknown = used - set(attacks)
        if unknown:
            raise SystemExit(f"{domain}: tasks name unknown attacks {sorted(unknown)}")
        for task in m.TASKS:
            rows.extend(variants(domain, task, attacks))
        catalogue[domain] = {"tools": m.TOOLS, "rules": m.RULES}
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise SystemExit("two variants share an id")
    return rows, catalogue


def render() -> tuple[str, str]:
    rows, catalogue = build()
    lines = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    return lines, json.dumps(catalogue, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    corpus, cat = render()
    CORPUS.write_text(corpus)
    CATALOGUE.write_text(cat)
    print(f"wrote {corpus.count(chr(10))} variants to {CORPUS} and catalogues to {CATALOGUE}")
