"""Median time to evaluate the whole policy pipeline in-process for one typical call.

Setup: a 50-tool catalogue, a rule sheet with rules and limits, a 200-entry session (built with
the workflow's own ledger), and a refund answering the person's latest turn. Each iteration
runs one full pass (``run_pass``: spec rebuilt, every check of the four stages) on a freshly
validated subject, so no object is reused between iterations. Run:
``python benchmarks/policy.py`` (``--index`` also runs a 10,000-call session through the
provenance index and prints its size).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from duraguard._destinations import destination_of
from duraguard._reading import _read
from duraguard._types import Context, SessionView, Subject
from duraguard.checks.policy import PolicyRegistry, Session, policy
from duraguard.checks.policy.record import _VERIFIED
from duraguard.checks.policy.said import _replaced
from duraguard.engine import run_pass
from duraguard.guardrail import Resources

RULES = """
rules:
  - name: small refunds are fine
    tool: refund_card
    when:
      - arg: amount
        lte: 100
    then: allow
  - name: refunds over 100 need a manager
    tool: refund_card
    when:
      - arg: amount
        gt: 100
    then: ask
    role: manager
  - name: no refunds on closed orders
    tool: refund_card
    when:
      - result: {tool: get_order, field: status}
        eq: closed
    then: refuse
limits:
  - name: at most 20 refunds an hour
    tool: refund_card
    count: 20
    per: 1h
spending:
  - name: at most 5000 refunded in a session
    tool: refund_card
    field: amount
    max: 5000
"""


def catalogue() -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for i in range(46):
        kind = ("read", "write", "send")[i % 3]
        tools[f"tool_{i:02d}"] = {
            "kind": kind,
            "input_schema": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "n": {"type": "number"}},
            },
        }
    obj = {"type": "object", "additionalProperties": False}
    tools["get_order"] = {
        "kind": "read",
        "input_schema": {
            **obj,
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    }
    tools["refund_card"] = {
        "kind": "write",
        "input_schema": {
            **obj,
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
        "undo": {"tool": "cancel_refund", "mapping": {"refund_id": "result.refund_id"}},
        "order": {"after": ["get_order"]},
    }
    tools["cancel_refund"] = {
        "kind": "write",
        "input_schema": {**obj, "properties": {"refund_id": {"type": "string"}}},
    }
    tools["send_email"] = {"kind": "send"}
    return {"tools": tools}


def session() -> tuple[SessionView, dict[str, Any]]:
    s = Session("bench-1")
    for i in range(200):
        if i % 20 == 0:
            s.turn(f"please look into order A{i} and refund ${i % 50 + 5} if it was charged twice")
        tool = ("get_order", "tool_03", "tool_07", "refund_card")[i % 4]
        args: dict[str, Any] = (
            {"order_id": f"A{i}"} if tool == "get_order" else {"id": f"X{i}", "n": i}
        )
        if tool == "refund_card":
            args = {"order_id": f"A{i}", "amount": 1}
        s.call(
            tool,
            args,
            result={"status": "paid", "total": i, "refund_id": f"R{i}"},
            at=1_700_000_000 + i * 60,
        )
    s.turn("refund $20 on order A1, it was charged twice")
    s.call(
        "get_order", {"order_id": "A1"}, result={"status": "paid", "total": 40}, at=1_700_012_100
    )
    args = {"order_id": "A1", "amount": 20}
    return s.view("refund_card", args, now=1_700_012_160), args


async def main(iterations: int = 3000) -> None:
    for preset in (None, "balanced"):
        await measure(preset, iterations)


async def measure(preset: str | None, iterations: int) -> None:
    view, args = session()
    resources = Resources(extra={"policy": PolicyRegistry(catalogue=catalogue(), rules=RULES)})
    spec = policy(preset=preset)  # type: ignore[arg-type]
    payload = Subject(
        placement="tool-args", tool="refund_card", value=args, call_id="c-1",
        context=Context(agent="support", workflow_id="bench-1"), session=view,
    ).model_dump(mode="json", by_alias=True)  # fmt: skip
    first = await run_pass([spec], Subject.model_validate(payload), resources)
    if first.verdict.action != "allow":
        raise SystemExit(f"the typical call should be allowed; got {first.verdict}")
    subjects = [Subject.model_validate(payload) for _ in range(iterations)]
    times, cpu = [], []
    for subject in subjects:
        c0, t0 = time.thread_time(), time.perf_counter()
        await run_pass([spec], subject, resources)
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    cold = []
    for subject in subjects[:500]:
        _read.cache_clear()  # a worker seeing this session for the first time
        _VERIFIED.clear()
        _replaced.cache_clear()
        destination_of.cache_clear()
        t0 = time.perf_counter()
        await run_pass([spec], subject, resources)
        cold.append(time.perf_counter() - t0)
    median = statistics.median(times) * 1e6
    view_bytes = len(view.model_dump_json())
    print(
        f"policy({'' if preset is None else f'preset={preset!r}'}) pipeline, 50-tool catalogue, 200-entry session "
        f"({len(view.entries)} entries in view, {view_bytes} bytes):"
    )
    print(
        f"  median {median:.0f} us per call over {iterations} calls (p90 {statistics.quantiles(times, n=10)[-1] * 1e6:.0f} us); "
        f"CPU time of this thread: median {statistics.median(cpu) * 1e6:.0f} us"
    )
    print(
        f"  cold (first call of the session on this worker: turn unread, entries unverified): median {statistics.median(cold) * 1e6:.0f} us"
    )


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()


def _hits(i: int) -> dict[str, Any]:
    return {
        "results": [
            {
                "title": f"Result {k} for query {i}",
                "url": f"https://site{i}.example/p/{k}",
                "snippet": f"{WORDS[(i + k) % 11]} offer item{i}x{k} contact u{i}x{k}@mail{i % 50}.example",
            }
            for k in range(10)
        ]
    }


def index(calls: int = 10_000) -> None:
    """The provenance index over a long session of search results (10 hits each, two in three
    from the web): its serialised size, and what noting a result and a view's lookup cost."""
    from duraguard._provenance import MAX_INDEX_BYTES

    s = Session("bench-index")
    s.turn("find me offers and email the best one to me")
    results = [_hits(i) for i in range(calls)]
    biggest, t0 = 0, time.perf_counter()
    for i, result in enumerate(results):
        s.call("web_search" if i % 3 else "search", {"q": f"offer {i}"}, result=result,
               labels=("web",) if i % 3 else ())  # fmt: skip
        if i % 500 == 0 or i == calls - 1:
            biggest = max(biggest, len(s.ledger.state.sources.model_dump_json()))
    noted = (time.perf_counter() - t0) / calls
    args = {"to": f"u{calls - 1}x3@mail{(calls - 1) % 50}.example", "body": "best offer"}
    t0 = time.perf_counter()
    for _ in range(1000):
        s.ledger.sources.lookup(args)
    looked = (time.perf_counter() - t0) / 1000
    state = s.ledger.state.sources
    print(f"provenance index over {calls} search results of 10 hits:")
    print(f"  largest serialised size {biggest} bytes (budget {MAX_INDEX_BYTES}); "
          f"{len(state.sources)} sources kept, {state.spilled_tokens} evicted outside tokens in the Bloom filter")  # fmt: skip
    print(f"  recording a call with its result (ledger, chain hash, provenance): {noted * 1e3:.2f} ms; "
          f"a call's lookup: {looked * 1e6:.0f} us")  # fmt: skip


if __name__ == "__main__":
    import sys

    asyncio.run(main())
    if "--index" in sys.argv:
        index()
