"""The content checks measured on their corpora, what one call costs, and how the cost grows.

For each class it prints recall (what had to be caught and was) and false positives (what had
to pass and did not) over the corpora in ``tests/corpus/`` (``address_*``, ``pii_*``,
``schema_*``), then the median CPU time of one ``check`` call of ``pii``, ``schema`` and
``address`` on typical inputs, then every content check's CPU time on adversarial inputs
(``benchmarks/_adversarial.py``: repeated near-matches for every rule) of 1 KiB, 64 KiB and
1 MiB, with the time per KiB at each size: linear growth keeps it flat. Nothing here asserts a
time. Run: ``python benchmarks/content_checks.py [--reps N] [--max-kib K]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._adversarial import INPUTS, SCHEMAS, spec  # noqa: E402
from duraguard import pii, schema  # noqa: E402
from duraguard._types import Subject  # noqa: E402
from duraguard.checks import Classification, address  # noqa: E402
from duraguard.checks.address import address_allowed, targets  # noqa: E402
from duraguard.checks.pii import RULES, find  # noqa: E402
from duraguard.engine import evaluate  # noqa: E402
from duraguard.guardrail import Guardrail, GuardrailSpec, Resources, build  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"


def load(name: str) -> list[dict[str, Any]]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


@dataclass
class Rate:
    """``hit`` of ``total``: caught (recall) or wrongly caught (false positives)."""

    hit: int = 0
    total: int = 0

    def add(self, yes: bool) -> None:
        self.hit += int(yes)
        self.total += 1

    def __str__(self) -> str:
        pct = 100.0 * self.hit / self.total if self.total else 0.0
        return f"{self.hit:>4}/{self.total:<4} {pct:6.1f}%"


@dataclass
class Report:
    recall: dict[str, Rate] = field(default_factory=dict)
    false_pos: dict[str, Rate] = field(default_factory=dict)
    cost_us: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per input: (median CPU µs, median wall µs) of one call."""
    growth: dict[tuple[str, str], dict[int, tuple[int, float]]] = field(default_factory=dict)
    """Per (check, adversarial input): {size asked in KiB: (JSON characters, CPU seconds)}."""


def _address(report: Report) -> None:
    report.recall["address: SSRF spellings refused"] = rate = Rate()
    for case in load("address_ssrf.jsonl"):
        rate.add(not address_allowed(case["target"])[0])
    report.false_pos["address: public URLs refused"] = rate = Rate()
    for case in load("address_public.jsonl"):
        rate.add(not address_allowed(case["target"])[0])
    hit, miss = Rate(), Rate()
    for case in load("address_prose.jsonl"):
        refused = any(not address_allowed(t)[0] for _, t in targets({"t": case["text"]}))
        (hit if case["expect"] == "refuse" else miss).add(refused)
    report.recall["address: URLs in free text refused"] = hit
    report.false_pos["address: benign free text refused"] = miss


def _pii(report: Report) -> None:
    per_rule = {rule: Rate() for rule in RULES}
    for case in load("pii_found.jsonl"):
        start = case["text"].index(case["value"])
        got = find(case["text"], region=case.get("region", "US"), key=case.get("key", ""))
        per_rule[case["rule"]].add((case["rule"], start, start + len(case["value"])) in got)
    for rule, rate in per_rule.items():
        report.recall[f"pii: {rule} (exact span)"] = rate
    benign = load("pii_benign.jsonl")
    report.false_pos["pii: benign lines with any finding"] = rate = Rate()
    by_rule = {rule: Rate() for rule in RULES}
    for case in benign:
        found = {rule for rule, _, _ in find(case["text"])}
        rate.add(bool(found))
        for rule, r in by_rule.items():
            r.add(rule in found)
    for rule, r in by_rule.items():
        report.false_pos[f"pii: benign lines read as {rule}"] = r


async def _schema(report: Report) -> None:
    docs = json.loads((CORPUS / "schema_documents.json").read_text(encoding="utf-8"))
    caught, wrong, undecided = Rate(), Rate(), Rate()
    for group in load("schema_suite.jsonl"):
        settings = dict(group.get("settings", {}))
        if "registry" in group:
            settings["registry"] = group["registry"]
        resources = Resources(tools={"t": _Declared(group["schema"])}, extra={"docs": docs})
        for case in group["tests"]:
            r = await evaluate([schema(**settings)], case["data"], tool="t", resources=resources)
            partial = (r.verdict.action, r.outcome) == ("deny", "partial")
            if case["valid"] is True:
                wrong.add(r.verdict.action != "allow")
            elif case["valid"] is False:
                caught.add((r.verdict.action, r.outcome) == ("deny", "complete"))
            else:
                undecided.add(partial)
    report.recall["schema: invalid arguments denied"] = caught
    report.recall["schema: unresolvable/ReDoS refused as partial"] = undecided
    report.false_pos["schema: valid arguments denied"] = wrong


@dataclass
class _Declared:
    input_schema: Any


ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount": {"type": "number", "minimum": 0},
        "reason": {"type": "string", "maxLength": 500},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"sku": {"type": "string"}}},
        },
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
PATTERN_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]-\\d{2,6}$"},
        "name": {"type": "string", "pattern": "^\\p{Lu}\\p{L}+$"},
    },
}
EMAIL = {
    "to": "ana.lopes@example.com",
    "subject": "Your order A-17",
    "body": "Hi Ana, your refund of 20.00 for order A-17 was issued on 2024-01-15. "
    "Questions? Call (415) 555-0132 or reply to this email. Card ending 1111.",
}
CLEAN = {"order_id": "A-17", "status": "shipped", "note": "left at the front door on Monday"}


def _cost(
    guard: Guardrail, make: Callable[[int], Subject], reps: int, run: Callable[[Any], Any]
) -> tuple[float, float]:
    """Median CPU and wall µs of one ``check``; each call gets a value of its own (``make(i)``),
    so no cache inside a check is measured as a hit the next call would not have."""
    cpu: list[float] = []
    wall: list[float] = []
    run(guard.check(make(-1)))  # warm what every call shares (compiled schema, phone metadata)
    for i in range(reps):
        subject = make(i)
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        run(guard.check(subject))
        cpu.append((time.process_time_ns() - c0) / 1000)
        wall.append((time.perf_counter_ns() - w0) / 1000)
    return statistics.median(cpu), statistics.median(wall)


def _costs(report: Report, reps: int) -> None:
    loop = asyncio.new_event_loop()
    try:
        run = loop.run_until_complete

        def made(spec: GuardrailSpec) -> Guardrail:
            return build(spec, Resources())

        def args(value: Callable[[int], Any], **kw: Any) -> Callable[[int], Subject]:
            return lambda i: Subject(placement="tool-args", value=value(i), tool="t", **kw)

        def email(i: int, sep: str = " ") -> dict[str, str]:
            return {k: v.replace(" ", sep) + f" (case x{i})" for k, v in EMAIL.items()}

        cases: list[tuple[str, Guardrail, Callable[[int], Subject]]] = [
            ("pii, an email with 3 findings (300 chars)", made(pii()), args(email)),
            ("pii, a clean 3-field result", made(pii()), args(lambda i: {**CLEAN, "n": f"x{i}"})),
            ("pii, the same email with zero-width spaces",
             made(pii()), args(lambda i: email(i, "\u200b "))),
            ("schema, 4 properties, valid", made(schema()),
             args(lambda i: {"order_id": f"A-{i}", "amount": 20, "items": [{"sku": "x"}]},
                  schema=ORDER_SCHEMA)),
            ("schema, 4 properties, 2 failures", made(schema()),
             args(lambda i: {"order_id": i, "amount": -1, "x": 1}, schema=ORDER_SCHEMA)),
            ("schema, 2 ECMA patterns (checked off the loop)", made(schema()),
             args(lambda i: {"order_id": f"A-{i % 999}", "name": "Émile"}, schema=PATTERN_SCHEMA)),
            ("address, one https URL", made(address()),
             args(lambda i: {"url": f"https://api.example.org/v1/orders?id={i}"})),
            ("address, prose with 2 URLs", made(address()),
             args(lambda i: {"note": f"see https://example.org/a{i} and http://docs.example.com/b{i}."})),
            ("address, no URL at all", made(address()), args(lambda i: {**CLEAN, "n": f"x{i}"})),
        ]  # fmt: skip
        for label, guard, make in cases:
            report.cost_us[label] = _cost(guard, make, reps, run)
    finally:
        loop.close()


GROWTH_KIB = (1, 64, 1024)


def _growth(report: Report, sizes: Sequence[int]) -> None:
    """CPU seconds of one ``check`` per adversarial input and size (the smallest run a few
    times, the best kept: fixed costs and noise would swamp a single 1 KiB call)."""
    resources = Resources(classifiers={"default": lambda text: Classification()})
    loop = asyncio.new_event_loop()
    try:
        for item in INPUTS:
            for check in item.checks:
                guard = build(spec(check), resources)
                schema_of = SCHEMAS.get(item.name) if check == "schema" else None
                row: dict[int, tuple[int, float]] = {}
                for kib in sizes:
                    value = item.make(kib * 1024)
                    subject = Subject(
                        placement="tool-args", value=value, tool="t", schema=schema_of
                    )
                    best = float("inf")
                    for _ in range(5 if kib <= 64 else 1):
                        c0 = time.process_time()
                        loop.run_until_complete(guard.check(subject))
                        best = min(best, time.process_time() - c0)
                    row[kib] = (len(json.dumps(value, ensure_ascii=False)), best)
                report.growth[(check, item.name)] = row
    finally:
        loop.close()


def measure(reps: int = 200, growth_kib: Sequence[int] = GROWTH_KIB) -> Report:
    report = Report()
    _address(report)
    _pii(report)
    asyncio.run(_schema(report))
    _costs(report, reps)
    _growth(report, growth_kib)
    return report


def _render_growth(report: Report) -> list[str]:
    if not report.growth:
        return []
    sizes = sorted({k for row in report.growth.values() for k in row})
    head = "".join(f"{f'{k} KiB ms':>12}" for k in sizes)
    per = "".join(f"{f'{k} KiB':>9}" for k in sizes)
    lines = [
        "adversarial inputs: CPU ms of one check, then µs per KiB of JSON (flat = linear); "
        "growth = per-KiB cost at the largest size over that at 64 KiB",
        f"  {'check':<10} {'input':<18}{head}   µs/KiB:{per}  growth",
    ]
    for (check, name), row in report.growth.items():
        ms = "".join(f"{row[k][1] * 1000:>12.1f}" for k in sizes)
        rate = {k: row[k][1] * 1e6 / (row[k][0] / 1024) for k in sizes}
        rates = "".join(f"{rate[k]:>9.1f}" for k in sizes)
        ratio = rate[sizes[-1]] / rate[64] if 64 in rate and rate[64] > 0 else float("nan")
        lines.append(f"  {check:<10} {name:<18}{ms}          {rates}  {ratio:6.2f}")
    return lines


def render(report: Report) -> str:
    width = max(len(k) for k in (*report.recall, *report.false_pos, *report.cost_us))
    lines = ["recall (must be caught)", *(f"  {k:<{width}}  {v}" for k, v in report.recall.items())]
    lines += ["false positives (must pass)"]
    lines += [f"  {k:<{width}}  {v}" for k, v in report.false_pos.items()]
    lines += [f"one check call{'':<{width - 12}}  median CPU µs   median wall µs"]
    lines += [
        f"  {k:<{width}}  {cpu:>14.1f}   {wall:>14.1f}" for k, (cpu, wall) in report.cost_us.items()
    ]
    return "\n".join([*lines, *_render_growth(report)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=500, help="calls timed per input")
    parser.add_argument(
        "--max-kib", type=int, default=1024, help="largest adversarial input (default 1 MiB)"
    )
    opts = parser.parse_args(argv)
    print(render(measure(opts.reps, [k for k in GROWTH_KIB if k <= opts.max_kib])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
