"""Issue 24, class 6: no workflow task of duraguard's does work that grows without bound.

* A model turn of 3,000 calls: each of its calls was judged, settled and scheduled in one
  workflow task (over the SDK's 2-second deadlock detector on a busy worker, and past the
  server's 2,000 pending activities, so the run never ended). The model step keeps the first
  :data:`~duraguard._bounds.MAX_CALLS_PER_TURN`, the loop tells the model the rest did not run.
* A hand-written loop handing 3,000 calls to ``before_calls``: the first 64 are judged, the
  rest refused with no step and no walk of their arguments, in one audit row.
* Notes for the provenance index waiting for a read: a replay (which reads none) let a whole
  run's results wait, and the task that next read the index (the continue-as-new carrying the
  session) worked them all in. At most a few wait now.

What each task costs is measured, not asserted here: ``benchmarks/task_cpu.py`` prints the
largest activation of each scenario.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType

from benchmarks._workflows import BeforeCallsInput, BeforeCallsWorkflow
from duraguard import pii, schema
from duraguard._bounds import MAX_CALLS_PER_TURN
from duraguard._ledger import Ledger
from duraguard._provenance import MAX_LEAVES_NOTED
from duraguard._sources import MAX_BACKLOG
from duraguard.checks.policy import policy
from duraguard.models import ScriptedTurn, answer, calls
from duraguard.testing import AgentInput, AgentWorkflow
from duraguard.types import ModelRequest

from ._harness import TOOL_LOG, Harness, make_harness

pytestmark = pytest.mark.timeout(240)

SEEN: list[str] = []


@pytest.fixture(scope="module")
async def h(temporal_env: Any) -> Harness:
    return await make_harness(temporal_env, workflows=[AgentWorkflow, BeforeCallsWorkflow])


def _told(request: ModelRequest) -> ScriptedTurn:
    """The model's turn after the big one: it says what it was told."""
    SEEN[:] = [m.content or "" for m in request.messages if m.role == "user"]
    return answer("ok")


@pytest.mark.parametrize("n", [MAX_CALLS_PER_TURN + 1, 3000])
async def test_a_turn_of_thousands_of_calls_runs_the_first_64_and_the_model_is_told(
    h: Harness, n: int
) -> None:
    TOOL_LOG.clear()
    turn = calls(*(("lookup", {"order_id": f"A{i}"}) for i in range(n)))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="look them all up", model=h.script(turn, _told), tools=["lookup"],
            guardrails=[schema(), pii(), policy()],
        ),
    )  # fmt: skip
    assert run.result.stop_reason == "done"
    assert sorted(a["order_id"] for _, a in TOOL_LOG) == sorted(f"A{i}" for i in range(64))
    said = f"proposed {n} tool calls; only the first {MAX_CALLS_PER_TURN} were considered"
    assert any(said in text for text in SEEN), SEEN
    failed = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    assert not [e for e in run.history.events if e.event_type == failed]
    assert run.activity_names().count("lookup") == MAX_CALLS_PER_TURN


async def test_before_calls_judges_at_most_64_calls_of_a_turn_and_refuses_the_rest(
    h: Harness,
) -> None:
    run = await h.run(
        BeforeCallsWorkflow.run, BeforeCallsInput(calls=3000, guardrails=[schema(), pii()])
    )
    assert run.result["may_run"] == MAX_CALLS_PER_TURN
    ((check, reason),) = run.result["refused"]  # one verdict for the 2,936 refused
    assert check == "duraguard.calls-per-turn"
    assert "this turn proposed 3000 tool calls; at most 64 are judged" in reason


def test_notes_for_the_provenance_index_never_pile_up_for_one_read() -> None:
    """A thousand results noted with no read in between (a replay builds no view): at most
    MAX_BACKLOG wait, and the index holds each, as it would have noted at once."""
    lazy, eager = Ledger.new("s"), Ledger.new("s")
    most = 0
    for j in range(1000):
        value = {"hits": [{"id": f"KB-{j}", "url": f"https://kb.example.com/{j}"}]}
        lazy.sources.note(value, f"result:{j}")
        eager.sources.note(value, f"result:{j}")
        eager.sources.flush()
        most = max(most, len(lazy.sources._backlog))
    assert most < MAX_BACKLOG <= 16
    assert lazy.state.sources == eager.state.sources


def test_a_trusted_result_of_thousands_of_rows_is_read_only_as_far_as_its_index_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """14,000 rows a trusted tool returned: reading every row into the provenance index took a
    third of a second of one workflow task (the suite's large-findings test then tripped the
    deadlock detector under load), though a source keeps 4,096 tokens. It is read only as far
    as those. Outside content, which took longer still, is read up to its bound too, and the
    index marks it read in part: what it cannot place then reads as `outside:unread`
    (tests/checks/test_policy_read_in_part.py)."""
    import duraguard._noting as sources

    read: list[str] = []
    real = sources.text_keys

    def counted(text: str, **kw: Any) -> set[str]:
        read.append(text)
        return real(text, **kw)

    monkeypatch.setattr(sources, "text_keys", counted)
    rows = {"rows": [f"row {i} of the export " + "x" * 40 for i in range(14_000)]}
    ledger = Ledger.new("s")
    ledger.record(
        call_id="c1", tool="export", args={}, action="allow", ran=True, at=0.0, result=rows
    )
    ledger.sources.flush()
    assert 0 < len(read) < 3_000
    assert not ledger.state.sources.unread  # a trusted result read in part marks nothing
    read.clear()
    ledger.record(
        call_id="c2", tool="fetch", args={}, action="allow", ran=True, at=0.0, result=rows,
        labels=("web",),
    )  # fmt: skip
    ledger.sources.flush()
    assert 0 < len(read) <= MAX_LEAVES_NOTED
    assert ledger.state.sources.unread
