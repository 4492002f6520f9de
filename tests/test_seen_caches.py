"""What a worker keeps of what inline checks were sent (entries, turns, guardrails) is bounded
by bytes as well as by count: a session of megabyte-sized arguments, or a huge rule sheet, costs
the worker the memory it was given and no more; what falls out is sent again in full."""

from __future__ import annotations

import pytest

from duraguard import _byref, pii, schema
from duraguard._byref import SeenEntries, SeenSpecs
from duraguard._byref import entries_digest as shown_digest
from duraguard._byref import specs_ref as specs_ref_for
from duraguard._types import LedgerEntry, SessionView
from duraguard.checks.policy import policy


def _entry(i: int, size: int) -> LedgerEntry:
    return LedgerEntry(
        index=i,
        call_id=f"c{i + 1}",
        tool="upload",
        args={"body": "x" * size},
        entry_hash=f"{i:04d}" * 16,
    )


def test_entries_kept_stay_within_their_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_byref, "MAX_SEEN_ENTRY_BYTES", 10_000)
    seen = SeenEntries()
    for i in range(20):
        seen.remember(SessionView(session_id="wf-1", entries=(_entry(i, 3000),)))
    assert seen.bytes_kept <= 10_000
    later = SessionView(session_id="wf-1")
    # the latest ones are put back; the oldest fell out, and a step naming them judges nothing
    latest = [_entry(i, 3000).entry_hash for i in (17, 18, 19)]
    back = seen.restore_at(later, (17, 18, 19), shown_digest(latest))
    assert back is not None and [e.index for e in back.entries] == [17, 18, 19]
    first = [_entry(0, 3000).entry_hash]
    assert seen.restore_at(later, (0,), shown_digest(first)) is None
    # the same entry shown again is counted once
    before = seen.bytes_kept
    seen.remember(SessionView(session_id="wf-1", entries=(_entry(19, 3000),)))
    assert seen.bytes_kept == before


def test_one_entry_over_the_budget_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_byref, "MAX_SEEN_ENTRY_BYTES", 10_000)
    seen = SeenEntries()
    seen.remember(SessionView(session_id="wf-1", entries=(_entry(0, 50_000),)))
    assert seen.bytes_kept == 0
    digest = shown_digest([_entry(0, 50_000).entry_hash])
    assert seen.restore_at(SessionView(session_id="wf-1"), (0,), digest) is None


def test_guardrails_kept_stay_within_their_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    lists = [(schema(), pii(name=f"pii-{i}")) for i in range(30)]
    monkeypatch.setattr(_byref, "MAX_SEEN_SPEC_BYTES", 5_000)
    seen = SeenSpecs()
    for specs in lists:
        seen.remember(specs)
    assert 0 < seen.bytes_kept <= 5_000
    assert seen.restore(specs_ref_for(lists[-1])) == lists[-1]
    assert seen.restore(specs_ref_for(lists[0])) is None  # fell out: the step judges nothing
    before = seen.bytes_kept
    seen.remember(lists[-1])  # sent again in full: counted once
    assert seen.bytes_kept == before
    big = (policy(),)
    seen.remember(big)
    assert seen.restore(specs_ref_for(big)) == big
