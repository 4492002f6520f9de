"""The fleet suite: three worker processes on one task queue (separate processes, separate
caches) on one PostgreSQL conversation store, with one of them SIGKILLed mid-session.

Each session is an ``agent_loop`` making four refunds, one a model turn (:mod:`._fleet`). Its
first two model steps and refunds run on worker ``w1`` alone; then ``w2`` and ``w3`` join and
``w1`` is killed with the second refund inside the tool: every later step runs on another
process, which has never seen the session's guardrails or entries (the retried step names them
by reference: the protocol misses) and reads the conversation ``w1`` wrote from the shared store.
History's worker identities show
where each step ran. Every session must end, every allowed refund be made exactly once (0 lost,
0 doubled, counted in the desk's SQLite file), and the verdicts be those the same sessions get
on one worker. The table (runs tried / effects lost / doubled / stuck) is printed with the
single-worker fault suite's (tests/faults/conftest.py).

The database itself is then SIGKILLed mid-session (model steps fail retryably until it is back),
and fifty agents across three workers draw on one principal's budget, one worker killed: the
entity never lets them overspend it.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

import duraguard
from benchmarks._byref import ByRef, by_reference
from duraguard.audit import audit_rows
from duraguard.budget import STATE_QUERY, BudgetState, budget, entity_id
from duraguard.principal import principal
from tests._servers import Replayer

from .._postgres import start_postgres
from ._ending import results as _results
from ._files import Files
from ._fleet import AMOUNTS, CAP, CAP_GUARD, FleetInput, FleetRun
from ._fleet_process import FleetWorker
from ._guards import ASK, HOLD
from ._tally import MEASURED, Tally, table
from .test_faults import _address, _client, _markers, _order

pytestmark = pytest.mark.timeout(600)  # a loaded machine: runs end by progress (_ending)
MODEL = "duraguard.model"


@pytest.fixture
async def fleet() -> AsyncIterator[list[FleetWorker]]:
    started: list[FleetWorker] = []
    yield started
    for w in started:
        w.kill()


@dataclass
class Session:
    spec: FleetInput
    expected: list[int]
    """How many times each refund must be made: 1 where the cap allows it, else 0."""


def _session(files: Files, **kw: Any) -> Session:
    refunds = [{"order_id": _order(files.desk), "amount": a} for a in AMOUNTS]
    spec = FleetInput(refunds=refunds, guardrails=[CAP_GUARD.spec()], **kw)
    return Session(spec, [1 if a <= CAP else 0 for a in AMOUNTS])


def _made(files: Files, order_id: str) -> int:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(files.desk)) as conn:
        sql = "SELECT COUNT(*) FROM refunds WHERE order_id = ?"
        return int(conn.execute(sql, (order_id,)).fetchone()[0])


async def _start(
    client: Client, queue: str, specs: Sequence[FleetInput], who: str | None = None
) -> list[WorkflowHandle[Any, Any]]:
    with principal(who):
        return [
            await client.start_workflow(
                FleetRun.run,
                spec,
                id=f"fleet-{uuid.uuid4().hex[:10]}",
                task_queue=queue,
                task_timeout=timedelta(seconds=2),
                execution_timeout=timedelta(minutes=5),
            )
            for spec in specs
        ]


async def _verdicts(handle: WorkflowHandle[Any, Any]) -> list[tuple[str, str, str | None]]:
    """The run's tool-argument verdicts (call, action, by), each call's once, in order."""
    seen: dict[str, tuple[str, str, str | None]] = {}
    for row in await audit_rows(handle, handle._data_converter):
        if row.placement == "tool-args" and row.call_id not in seen:
            seen[row.call_id] = (row.call_id, row.action, row.by)
    return list(seen.values())


async def _kept_per_model_step(handle: WorkflowHandle[Any, Any]) -> list[int]:
    """How many tool results each model step was sent by digest (kept in the store by their
    tool steps, duraguard._kept_results), in order."""
    events = (await handle.fetch_history()).events
    return [
        len(json.loads(a.input.payloads[0].data).get("kept", ()))
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and (a := e.activity_task_scheduled_event_attributes).activity_type.name
        == "duraguard.model"
    ]


async def _model_workers(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The identity of the worker that ran each model step, in order (the attempt that
    completed: a killed worker's attempt that never did is not counted)."""
    events = (await handle.fetch_history()).events
    types = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    started = {
        e.event_id: e.activity_task_started_event_attributes.identity
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    }
    out = []
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a = e.activity_task_completed_event_attributes
            if types.get(a.scheduled_event_id) == MODEL:
                out.append(started[a.started_event_id])
    return out


async def _tally(
    fault: str,
    files: Files,
    sessions: Sequence[Session],
    handles: Sequence[WorkflowHandle[Any, Any]],
) -> tuple[Tally, list[dict[str, Any] | None]]:
    results = await _results(handles)
    made = [[_made(files, r["order_id"]) for r in s.spec.refunds] for s in sessions]
    pairs = [
        (m, e)
        for s, ms in zip(sessions, made, strict=True)
        for m, e in zip(ms, s.expected, strict=True)
    ]
    t = Tally(
        fault=fault,
        tried=len(sessions),
        lost=sum(1 for m, e in pairs if m < e),
        doubled=sum(1 for m, e in pairs if m > e),
        stuck=sum(1 for r in results if r is None),
    )
    print(f"\n{table([t])}")
    MEASURED.append(t)
    assert (t.lost, t.doubled, t.stuck) == (0, 0, 0), (t, results, made)
    assert all(r is not None and r["stop_reason"] == "done" for r in results), results
    return t, results


async def _replays(handles: Sequence[WorkflowHandle[Any, Any]]) -> None:
    plugin = duraguard.DuraguardPlugin(guardrails=[CAP_GUARD, HOLD, ASK])
    replayer = Replayer(workflows=[FleetRun], plugins=[plugin])
    for handle in handles:
        await replayer.replay_workflow(await handle.fetch_history())
    assert plugin.checks_run == 0


async def test_three_workers_one_store_one_killed_mid_session(
    temporal_env: Any, files: Files, fleet: list[FleetWorker], postgres: Any
) -> None:
    address, client = _address(temporal_env), await _client(_address(temporal_env))
    # The same sessions on one worker first: the verdicts the fleet must give.
    solo_queue = f"fleet-{uuid.uuid4().hex[:8]}"
    fleet.append(await FleetWorker("solo", address, solo_queue, files, postgres.dsn).start())
    solo = [_session(files) for _ in range(6)]
    solo_handles = await _start(client, solo_queue, [s.spec for s in solo])
    solo_results = await _results(solo_handles)
    fleet[-1].kill()

    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    w1 = FleetWorker(
        "w1", address, queue, files, postgres.dsn, "--fault", "tool-before", "--fault-call", "c2"
    )
    await w1.start()
    fleet.append(w1)
    sessions = [_session(files) for _ in range(6)]
    handles = await _start(client, queue, [s.spec for s in sessions])
    await _markers(files, "tool-before", len(sessions))  # each session's second refund, on w1
    for name in ("w2", "w3"):
        fleet.append(await FleetWorker(name, address, queue, files, postgres.dsn).start())
    w1.kill()  # three workers served the queue; now two do, w1's refunds inside the tool
    _, results = await _tally("3 workers, one killed mid-session", files, sessions, handles)

    assert results == solo_results
    # Each refund that ran reached the model whole, through the store: its tool step (w1's, or
    # a survivor's retry of the one w1 died in) kept it, the next model step (on any worker) was
    # sent its digest, read it back from PostgreSQL, and called the model once.
    ran = sum(1 for a in AMOUNTS if a <= CAP)
    assert all(f"{ran} receipts read" in r["answer"] for r in results), results
    for h in handles:
        assert await _kept_per_model_step(h) == [0] + [1 if a <= CAP else 0 for a in AMOUNTS]
    for got, want in zip(handles, solo_handles, strict=True):
        assert [v[1:] for v in await _verdicts(got)] == [v[1:] for v in await _verdicts(want)]
    spread = [await _model_workers(h) for h in handles]
    for workers in spread:
        # Two model steps on w1, every one after on another process, which read what w1
        # appended from the shared store.
        assert workers[:2] == ["w1", "w1"] and len(workers) == len(AMOUNTS) + 1, spread
        assert set(workers[2:]) <= {"w2", "w3"}, spread
    both = sum(1 for w in spread if {"w2", "w3"} <= set(w))
    print(f"model steps by worker, per session: {spread}; sessions served by w2 and w3: {both}")
    protocol, solo_protocol = ByRef(), ByRef()
    for h in handles:
        protocol += by_reference((await h.fetch_history()).events)
    for h in solo_handles:
        solo_protocol += by_reference((await h.fetch_history()).events)
    print(
        f"by reference: {protocol.by_ref} steps, {protocol.misses} missed on 3 workers "
        f"({solo_protocol.misses} of {solo_protocol.by_ref} on one)"
    )
    # w2 and w3 had never seen what w1 was sent: the second refund's step, retried on one of
    # them by reference, missed in every session, and the run went on with it sent in full.
    assert solo_protocol.misses == 0 and protocol.misses >= len(sessions)
    await _replays(handles)


async def test_fifty_agents_across_three_workers_never_overspend_one_budget(
    temporal_env: Any, files: Files, fleet: list[FleetWorker], postgres: Any
) -> None:
    """50 sessions of one principal, two refunds of 10 each (1,000 asked for), on three
    workers, one of them SIGKILLed once the first session ended, against a budget of 300: the
    entity takes the reservations one at a time, so exactly 30 refunds are made and paid for,
    nothing is left held, and no session is stuck."""
    address, client = _address(temporal_env), await _client(_address(temporal_env))
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    for name in ("b1", "b2", "b3"):
        fleet.append(await FleetWorker(name, address, queue, files, postgres.dsn).start())
    who, account, limit = f"fleet-{uuid.uuid4().hex[:8]}", f"acct-{uuid.uuid4().hex[:6]}", 300.0
    guard = budget(limit=limit, tools=["refund_card"], account=account)
    specs = [
        FleetInput(
            refunds=[{"order_id": _order(files.desk), "amount": 10.0} for _ in range(2)],
            guardrails=[guard],
        )
        for _ in range(50)
    ]
    began = time.monotonic()
    handles = await _start(client, queue, specs, who)
    ending = [asyncio.ensure_future(h.result()) for h in handles]
    await asyncio.wait(ending, return_when=asyncio.FIRST_COMPLETED)
    fleet[0].kill()  # with reservations held and settlements under way on it
    results = await _results(handles, waits_on=[client.get_workflow_handle(entity_id(who))])
    took = time.monotonic() - began
    made = [_made(files, r["order_id"]) for s in specs for r in s.refunds]
    state = await client.get_workflow_handle(entity_id(who)).query(
        STATE_QUERY, result_type=BudgetState
    )
    spent = state.accounts[account]
    t = Tally(
        fault="budget: 50 agents, 3 workers, one killed",
        tried=len(specs),
        lost=max(0, round(spent.spent / 10.0) - sum(made)),  # paid for, never made
        doubled=sum(1 for m in made if m > 1) + max(0, sum(made) - round(spent.spent / 10.0)),
        stuck=sum(1 for r in results if r is None),
    )
    MEASURED.append(t)
    print(
        f"\n{table([t])}\nbudget under contention: {len(made)} refunds asked ({10.0 * len(made):.0f}),"
        f" {sum(made)} made, spent {spent.spent:.0f} of {limit:.0f}, held {spent.held:.0f};"
        f" {len(made) / took:.1f} refunds asked a second across 3 workers (one killed)"
    )
    assert (t.lost, t.doubled, t.stuck) == (0, 0, 0), (t, results)
    assert spent.spent <= limit and spent.held == 0.0
    assert sum(made) * 10.0 == spent.spent == limit  # every cent spent was a refund made
    workers = {w for h in handles for w in await _model_workers(h)}
    assert workers == {"b1", "b2", "b3"}, workers
    assert json.dumps(results).count('"done"') == len(specs)


@pytest.fixture
async def own_postgres() -> AsyncIterator[Any]:
    """A PostgreSQL server of this case's own, to kill and start again."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.remove()


async def test_the_database_killed_and_restarted_mid_session_on_three_workers(
    temporal_env: Any, files: Files, fleet: list[FleetWorker], own_postgres: Any
) -> None:
    """Each session's second refund stops inside the tool on ``w1``; PostgreSQL is SIGKILLed
    (recovered from its log when it starts again), ``w2`` and ``w3`` join and ``w1`` dies: the
    model steps that need the store meanwhile fail retryably (``StoreUnavailable``) until it is
    back, every session ends, and no refund is lost or made twice."""
    address, client = _address(temporal_env), await _client(_address(temporal_env))
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    dsn = own_postgres.dsn
    w1 = FleetWorker(
        "w1", address, queue, files, dsn, "--fault", "tool-before", "--fault-call", "c2"
    )
    fleet.append(await w1.start())
    sessions = [_session(files) for _ in range(4)]
    handles = await _start(client, queue, [s.spec for s in sessions])
    await _markers(files, "tool-before", len(sessions))
    own_postgres.stop(signal.SIGKILL)
    for name in ("w2", "w3"):
        fleet.append(await FleetWorker(name, address, queue, files, dsn).start())
    w1.kill()
    seen = await _store_unavailable(handles)  # a model step found no store, and will retry
    own_postgres.start()
    await _tally("3 workers, database killed", files, sessions, handles)
    assert seen
    await _replays(handles)


async def _store_unavailable(handles: Sequence[WorkflowHandle[Any, Any]]) -> list[str]:
    """Wait until a run's pending model step last failed with ``StoreUnavailable``."""
    for _ in range(600):
        seen = []
        for h in handles:
            for pending in (await h.describe()).raw_description.pending_activities:
                if "StoreUnavailable" in str(pending.last_failure):
                    seen.append(h.id)
        if seen:
            return seen
        await asyncio.sleep(0.05)
    raise AssertionError("no model step failed while the database was down")
