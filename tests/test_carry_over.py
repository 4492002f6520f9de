"""A long session continues-as-new with its ledger carried over, sealed by the worker."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowFailureError

from ._harness import TOOLS, Harness, Run, make_harness
from ._session_workflows import (
    Batch,
    CarryOver,
    QueriedBeforeItsSession,
    WhoAmIAcrossRuns,
    whoami,
)


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, workflows=[CarryOver], session_key="k" * 32)


async def test_session_carries_over_and_call_ids_continue(h: Harness) -> None:
    run = await h.run(CarryOver.run, Batch(calls_per_run=3, runs_left=2))
    assert run.result == [f"c{i}:True" for i in range(1, 10)]


async def test_a_sealed_session_altered_in_transit_fails_the_next_run(h: Harness) -> None:
    for tamper in ("mac", "entry"):
        run = await h.run(
            CarryOver.run, Batch(calls_per_run=2, runs_left=1, tamper=tamper), expect_failure=True
        )
        assert isinstance(run.result, WorkflowFailureError)
        assert "session carried into this run was refused" in str(run.result.cause)


async def test_a_sealed_session_from_another_workflow_is_refused(h: Harness) -> None:
    first = await h.run(CarryOver.run, Batch(calls_per_run=1, runs_left=0))
    assert first.result == ["c1:True"]
    # seal one in workflow A, then hand it to workflow B
    import uuid

    from temporalio.client import WorkflowHandle  # noqa: F401

    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        a = await h.start(CarryOver.run, Batch(calls_per_run=1, runs_left=1), task_queue=tq)
        await a.result()
        history = [e async for e in h.client.get_workflow_handle(a.id).fetch_history_events()]
    started = [e for e in history if e.HasField("workflow_execution_started_event_attributes")]
    sealed_payload = started[-1].workflow_execution_started_event_attributes.input
    batch = (await h.client.data_converter.decode(sealed_payload.payloads, [Batch]))[0]
    assert batch.sealed is not None
    other = await h.run(
        CarryOver.run, Batch(calls_per_run=1, runs_left=0, sealed=batch.sealed), expect_failure=True
    )
    assert "belongs to" in str(other.result.cause)


async def test_carry_over_without_a_session_key_fails_with_the_fix(temporal_env) -> None:
    h = await make_harness(temporal_env, workflows=[CarryOver])
    run = await h.run(CarryOver.run, Batch(calls_per_run=1, runs_left=1), expect_failure=True)
    assert "DURAGUARD_SESSION_KEY" in str(run.result.cause)


async def test_a_tool_step_is_sent_no_run_ids_and_a_key_only_where_the_worker_cannot_make_it(
    temporal_env,
) -> None:
    """The run's ids come from the step's activity info (not sent: about 170 bytes a call), and
    so does the idempotency key in the run that began the chain; a continued run sends it, since
    its key names the chain's first run. The tool is told the same either way."""
    h = await make_harness(
        temporal_env,
        tools=[*TOOLS, whoami],
        workflows=[WhoAmIAcrossRuns],
        session_key="k" * 32,
    )
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(
            WhoAmIAcrossRuns.run, Batch(calls_per_run=1, runs_left=1), task_queue=tq
        )
        told = await handle.result()
    wid = handle.id
    first_run = handle.first_execution_run_id
    last_run = (await h.client.get_workflow_handle(wid).describe()).run_id
    assert first_run is not None and last_run != first_run
    assert told == [
        {"key": f"{wid}/{first_run}/c1", "workflow_id": wid, "run_id": first_run,
         "workflow_type": "WhoAmIAcrossRuns"},
        {"key": f"{wid}/{first_run}/c2", "workflow_id": wid, "run_id": last_run,
         "workflow_type": "WhoAmIAcrossRuns"},
    ]  # fmt: skip
    sent = []
    for run_id in (first_run, last_run):
        history = await h.client.get_workflow_handle(wid, run_id=run_id).fetch_history()
        await h.replay(history)
        run = Run(result=None, handle=handle, history=history, task_queue=tq)
        (step,) = run.scheduled_inputs("whoami")
        sent.append((step.get("idempotency_key"), step.get("context")))
    assert sent == [(None, {}), (f"{wid}/{first_run}/c2", {})]


async def test_a_session_asked_for_first_in_a_query_is_refused_and_the_run_goes_on(
    temporal_env,
) -> None:
    """A query cannot register handlers or record the patch: the session is not made there
    (a clear error for the query), and the run makes it at its first call, as it replays."""
    from temporalio.client import WorkflowQueryFailedError

    h = await make_harness(temporal_env, workflows=[QueriedBeforeItsSession])
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(QueriedBeforeItsSession.run, task_queue=tq)
        with pytest.raises(WorkflowQueryFailedError, match=r"call duraguard.session\(\) in"):
            await handle.query(QueriedBeforeItsSession.peek)
        await handle.signal(QueriedBeforeItsSession.start)
        assert await handle.result() == "c1:True"
        assert await handle.query(QueriedBeforeItsSession.peek) == 1  # made by then
    await h.replay(await handle.fetch_history())
