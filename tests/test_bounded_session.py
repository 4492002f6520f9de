"""What a session carries across continue-as-new stays bounded whatever the tools return.

Thousands of search-like calls (ten hits each, every value new), some with outside content,
some with very large arguments or results, audit rows with long reasons, used decisions: the
sealed snapshot stays under its bound at every continue-as-new, the record still verifies after
each, and what stays reachable (the latest calls and results) is still found. Pure Python (the
session outside a workflow), so thousands of calls take seconds; the same machinery on a real
server is ``tests/test_long_session.py``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from duraguard._ledger import MAX_CARRIED_ENTRY_BYTES, Ledger
from duraguard._outcome import CallOutcome
from duraguard._provenance import MAX_INDEX_BYTES
from duraguard._session import MAX_RECORD_BYTES, ROWS_CARRIED, GuardSession
from duraguard._sourcestore import MAX_CARRIED_ROW_BYTES
from duraguard._wire import AuditRow, SessionSnapshot

CALLS = 2_000
RUN = 150
"""Calls per run: the session continues-as-new after each this many."""
CARRIED_BOUND = 1024 * 1024
"""The sealed session's largest size (JSON) allowed here: half the 2 MiB payload limit."""


class OfflineSession(GuardSession):
    """A guard session outside any workflow: workflow time is a counter; nothing is published."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.clock = 1_700_000_000.0

    def publish(self) -> None:
        """Nothing to publish outside a workflow."""

    def now(self) -> float:  # type: ignore[override]
        self.clock += 1.0
        return self.clock


def _session(snapshot: SessionSnapshot | None = None) -> OfflineSession:
    s = OfflineSession(workflow_id="long-1", run_id="r", chain_id="r0", ledger=Ledger.new("long-1"))
    if snapshot is not None:
        s.restore(snapshot)
    else:
        s.ledger.add_turn("find the orders charged twice and refund them")
    return s


def _token(n: int, i: int) -> str:
    return hashlib.blake2b(f"{n}/{i}".encode(), digest_size=5).hexdigest()


def _hits(page: int) -> dict[str, Any]:
    hits = []
    for k in range(10):
        n = page * 10 + k
        hits.append(
            {
                "id": f"KB-{n:07d}",
                "order_id": f"A{n}",
                "url": f"https://kb.example.com/{_token(n, 1)}/{n}",
                "title": f"note {_token(n, 2)} about parcel {n}",
                "snippet": f"Order A{n} {_token(n, 3)} was charged twice; ref {_token(n, 4)}.",
                "amount": 20.0 + k,
            }
        )
    return {"page": page, "hits": hits}


def _call(s: GuardSession, number: int) -> None:
    """Call ``number``: a search (every 7th labelled web content), now and then one with huge
    arguments or a huge result, a refund of a hit, an audit row and a used decision."""
    cid = s.next_call_id()
    tool, args, result = "search", {"query": "charged twice", "page": number}, _hits(number)
    labels: tuple[str, ...] = ("web",) if number % 7 == 0 else ()
    if number % 10 == 0:
        tool, args, result = "refund", {"order_id": f"A{number * 10 - 9}", "amount": 21.0}, {}
    if number % 97 == 0:
        args = {**args, "note": "x" * 300_000}
    if number % 89 == 0:
        result = {"blob": "y" * 600_000}
    s.view(tool, args)  # what a check of the call reads
    s.record(CallOutcome(call_id=cid, tool=tool, args=args, ran=True, result=result, labels=labels))
    if number % 5 == 0:
        s.note(
            AuditRow(
                turn=0, call_id=cid, tool=tool, placement="tool-args", action="observe",
                by="pii", reason="found " + "z" * 5_000,
            )
        )  # fmt: skip
    if number % 25 == 0:
        s.ledger.use_nonce(f"nonce-{number:08d}-" + "n" * 40)


def _parts(snap: SessionSnapshot) -> dict[str, int]:
    ledger = snap.ledger
    return {
        "entries": sum(len(e.model_dump_json()) for e in ledger.entries),
        "provenance": len(ledger.sources.model_dump_json(exclude={"records", "listings"})),
        "records": sum(map(len, (*ledger.sources.records, *ledger.sources.listings))),
        "results": sum(len(r.model_dump_json()) for r in snap.results),
        "rows": sum(len(r.model_dump_json()) for r in snap.rows),
        "all": len(snap.model_dump_json()),
    }


@pytest.mark.no_cover  # CPU-bound, covered elsewhere: not traced
@pytest.mark.timeout(600)  # 30 s of CPU quiet; a quarter of a core under heavy load
def test_the_carried_session_stays_bounded_over_thousands_of_search_calls() -> None:
    s = _session()
    sizes: list[dict[str, int]] = []
    for number in range(1, CALLS + 1):
        _call(s, number)
        if number % RUN == 0:
            snap = SessionSnapshot.model_validate_json(s.snapshot(64).model_dump_json())
            sizes.append(_parts(snap))
            s = _session(snap)  # the next run takes over, as resume() does
            assert s.ledger.verify() is None
            assert s.counts.calls == number
    assert len(sizes) == CALLS // RUN
    for part in sizes:
        assert part["all"] <= CARRIED_BOUND, part
        assert part["entries"] <= MAX_CARRIED_ENTRY_BYTES, part
        assert part["provenance"] <= MAX_INDEX_BYTES, part
        assert part["records"] <= MAX_CARRIED_ROW_BYTES, part
        assert part["results"] <= MAX_RECORD_BYTES, part
    # The index is full long before the end and stays full: flat, not growing.
    late = [p["all"] for p in sizes[len(sizes) // 2 :]]
    assert max(late) - min(late) <= 0.25 * max(late), late


def test_what_stays_reachable_is_still_found_after_each_continue_as_new() -> None:
    s = _session()
    for number in range(1, 3 * RUN + 1):
        _call(s, number)
        if number % RUN == 0:
            snap = SessionSnapshot.model_validate_json(s.snapshot(64).model_dump_json())
            s = _session(snap)
    latest = s.ledger.state.entries[-1]
    assert latest.index == 3 * RUN - 1 and latest.tool == "refund"
    # The last search's hits are where a refund of one of them takes its values from.
    search = s.ledger.state.entries[-2]
    hit = f"A{search.args['page'] * 10 + 3}"
    seen = s.ledger.view(tool="refund", args={"order_id": hit}, now=s.now())
    assert any(f"result:{search.index}" in p.sources for p in seen.provenance), seen.provenance
    assert seen.turns == ("find the orders charged twice and refund them",)
    # Audit rows carried: the latest, each reason cut.
    assert 0 < len(snap.rows) <= ROWS_CARRIED
    assert all(len(r.reason or "") <= 501 for r in snap.rows)


def test_one_huge_result_or_argument_is_dropped_from_what_is_carried_not_the_run() -> None:
    s = _session()
    cid = s.next_call_id()
    s.record(
        CallOutcome(
            call_id=cid, tool="search", args={"q": "a" * 500_000}, ran=True,
            result={"blob": "b" * 900_000},
        )
    )  # fmt: skip
    snap = s.snapshot(64)
    assert snap.ledger.entries == [] and snap.ledger.dropped == 1
    assert snap.results == ()
    nxt = _session(SessionSnapshot.model_validate_json(snap.model_dump_json()))
    assert nxt.ledger.verify() is None and nxt.ledger.calls == 1
    assert nxt.ledger.view(tool="search", args={}, now=nxt.now()).tool_counts == {"search": 1}
