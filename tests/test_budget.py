"""Per-principal budgets: reserve before the tool, commit or release after, holds expire."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard.budget as budget_module
    from duraguard._types import Context, PassResult, Subject
    from duraguard._updates import send_update
    from duraguard.budget import (
        BUDGET_ACTIVITIES,
        BUDGET_WORKFLOWS,
        STATE_QUERY,
        BudgetState,
        BudgetWorkflow,
        SettleRequest,
        budget,
        entity_id,
        reservations_of,
        settle,
    )
    from duraguard.engine import run_pass
    from duraguard.guardrail import GuardrailSpec, Resources
    from duraguard.principal import current_principal, principal
    from tests._servers import (
        duraguard_client,
        replay,
        sandbox_runner,
        start_dev_server,
        start_time_skipping,
    )

TIMEOUT = timedelta(seconds=60)
ACT = timedelta(seconds=20)


class PayInput(BaseModel):
    spec: GuardrailSpec
    amount: float
    fail: bool = False
    block: bool = False


class CheckInput(BaseModel):
    spec: GuardrailSpec
    subject: Subject


class PayOutcome(BaseModel):
    allowed: bool
    ran: bool = False
    reason: str | None = None


@activity.defn(name="test.budget-check")
async def check_budget(req: CheckInput) -> PassResult:
    """Stands in for duraguard.check: one pass, worker side, with no resources lent."""
    return await run_pass([req.spec], req.subject, Resources())


RELEASE_BLOCKED = asyncio.Event()


@activity.defn(name="test.pay")
async def pay(amount: float, fail: bool, block: bool) -> float:
    if block:
        await RELEASE_BLOCKED.wait()  # the worker dies here, between reserve and release
    if fail:
        raise RuntimeError("card declined")
    return amount


@workflow.defn(name="test.budget-pay")
class PayWorkflow:
    """A one-call agent loop: check (reserve), run the tool, then commit or release."""

    @workflow.run
    async def run(self, req: PayInput) -> PayOutcome:
        info = workflow.info()
        subject = Subject(
            placement="tool-args",
            tool="pay",
            call_id="call-1",
            value={"amount": req.amount},
            context=Context(
                principal=current_principal(), workflow_id=info.workflow_id, run_id=info.run_id
            ),
        )
        checked = await workflow.execute_activity(
            check_budget, CheckInput(spec=req.spec, subject=subject), start_to_close_timeout=ACT
        )
        if checked.tripped:
            return PayOutcome(allowed=False, reason=checked.verdict.reason)
        held = reservations_of(checked.verdicts)
        try:
            await workflow.execute_activity(
                pay,
                args=[req.amount, req.fail, req.block],
                start_to_close_timeout=timedelta(hours=1),
                retry_policy=RetryPolicy(maximum_attempts=1 if req.fail else 0),
            )
        except ActivityError:
            await settle(held, ok=False)
            return PayOutcome(allowed=True, ran=False)
        await settle(held, ok=True)
        return PayOutcome(allowed=True, ran=True)


WORKFLOWS = [PayWorkflow, *BUDGET_WORKFLOWS]
ACTIVITIES = [check_budget, pay, *BUDGET_ACTIVITIES]


def _worker(client: Client, queue: str, *, workflows: list[type] | None = None) -> Worker:
    return Worker(
        client,
        task_queue=queue,
        workflows=WORKFLOWS if workflows is None else workflows,
        activities=ACTIVITIES if workflows is None else BUDGET_ACTIVITIES,
        workflow_runner=sandbox_runner("tests"),
    )


async def _pay(client: Client, queue: str, who: str, req: PayInput) -> tuple[Any, PayOutcome]:
    with principal(who):
        handle = await client.start_workflow(
            PayWorkflow.run,
            req,
            id=f"pay-{uuid.uuid4()}",
            task_queue=queue,
            execution_timeout=TIMEOUT,
            result_type=PayOutcome,
        )
    return handle, await handle.result()


async def _state(client: Client, who: str) -> BudgetState:
    return await client.get_workflow_handle(entity_id(who)).query(
        STATE_QUERY, result_type=BudgetState
    )


def _who() -> str:
    return f"p-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    started = await start_dev_server()
    try:
        yield started
    finally:
        await started.shutdown()


@pytest.fixture(scope="module")
async def client(env: WorkflowEnvironment) -> Client:
    return duraguard_client(env)


async def test_five_concurrent_calls_against_a_limit_for_two_exactly_two_pass(
    client: Client,
) -> None:
    queue, who = f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=100, tools=["pay"])
    async with _worker(client, queue):
        runs = await asyncio.gather(
            *(_pay(client, queue, who, PayInput(spec=spec, amount=40)) for _ in range(5))
        )
        state = await _state(client, who)
    outcomes = [out for _, out in runs]
    assert sum(o.allowed for o in outcomes) == 2
    assert all(o.ran for o in outcomes if o.allowed)
    refused = [o.reason or "" for o in outcomes if not o.allowed]
    assert len(refused) == 3
    assert all(f"of '{who}'" in r and "of 100 per day" in r and "asks 40" in r for r in refused)
    account = state.accounts["budget"]
    assert account.spent == 80 and account.holds == {}
    for handle, _ in runs:
        await replay(handle, WORKFLOWS, "tests")
    await replay(client.get_workflow_handle(entity_id(who)), WORKFLOWS, "tests")


async def test_concurrent_reservations_from_plain_code_never_overspend(client: Client) -> None:
    queue, who = f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=100, task_queue=queue)
    resources = Resources(extra={"temporal_client": client})

    async def one(i: int) -> PassResult:
        subject = Subject(
            placement="tool-args",
            tool="pay",
            value={"amount": 30},
            call_id=f"c{i}",
            context=Context(principal=who, workflow_id="w"),
        )
        return await run_pass([spec], subject, resources)

    async with _worker(client, queue, workflows=BUDGET_WORKFLOWS):
        results = await asyncio.gather(*(one(i) for i in range(6)))
        state = await _state(client, who)
    assert sum(not r.tripped for r in results) == 3
    assert state.accounts["budget"].held == 90
    held = [r for res in results for r in reservations_of(res.verdicts)]
    assert {r.id for r in held} == set(state.accounts["budget"].holds)


async def test_a_failed_tool_releases_its_reservation(client: Client) -> None:
    queue, who = f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=100, tools=["pay"])
    async with _worker(client, queue):
        h1, failed = await _pay(client, queue, who, PayInput(spec=spec, amount=70, fail=True))
        after_failure = await _state(client, who)
        h2, paid = await _pay(client, queue, who, PayInput(spec=spec, amount=70))
        after_success = await _state(client, who)
    assert failed == PayOutcome(allowed=True, ran=False)
    assert after_failure.accounts["budget"].spent == 0
    assert after_failure.accounts["budget"].holds == {}
    assert paid == PayOutcome(allowed=True, ran=True)
    assert after_success.accounts["budget"].spent == 70
    for h in (h1, h2):
        await replay(h, WORKFLOWS, "tests")


async def test_a_hold_outlives_a_dead_worker_while_its_run_runs_and_returns_when_it_ends(
    client: Client,
) -> None:
    agents_queue, budget_queue, who = f"agents-{uuid.uuid4()}", f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=100, tools=["pay"], hold_seconds=1, task_queue=budget_queue)
    resources = Resources(extra={"temporal_client": client})

    async def another(call_id: str) -> PassResult:
        return await run_pass(
            [spec],
            Subject(
                placement="tool-args",
                tool="pay",
                value={"amount": 80},
                call_id=call_id,
                context=Context(principal=who, workflow_id=f"other-{call_id}"),
            ),
            resources,
        )

    async with _worker(client, budget_queue, workflows=BUDGET_WORKFLOWS):
        agent_worker = _worker(client, agents_queue)
        run = asyncio.create_task(agent_worker.run())
        with principal(who):
            stuck = await client.start_workflow(
                PayWorkflow.run,
                PayInput(spec=spec, amount=80, block=True),
                id=f"pay-{uuid.uuid4()}",
                task_queue=agents_queue,
                execution_timeout=TIMEOUT,
            )
        for _ in range(200):  # until the hold is taken
            state = await _state(client, who) if await _exists(client, who) else None
            if state and state.accounts.get("budget") and state.accounts["budget"].holds:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the reservation was never taken")
        await agent_worker.shutdown()  # the agent's worker goes away: nobody settles for now
        await run
        entity = client.get_workflow_handle(entity_id(who))
        for _ in range(400):  # the entity asks after the run twice, and keeps the hold
            if await _owner_checks(entity) >= 2:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the entity never asked whether the holding run still runs")
        state = await _state(client, who)
        assert list(state.accounts["budget"].holds) and state.expired == 0
        # The run may still pay: another 80 would overspend, so it is refused.
        assert (await another("c2")).tripped
        # The run ends without settling (an operator terminates it): the hold comes back.
        await stuck.terminate("test over")
        for _ in range(400):
            state = await _state(client, who)
            if not state.accounts["budget"].holds:
                break
            await asyncio.sleep(0.05)
        assert state.accounts["budget"].holds == {}
        assert state.accounts["budget"].spent == 0
        assert state.expired == 1
        assert not (await another("c3")).tripped  # the money is back: 80 fits again
        await replay(entity, WORKFLOWS, "tests")


async def _owner_checks(entity: Any) -> int:
    history = await entity.fetch_history()
    return sum(
        1
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name
        == "duraguard.budget-owners"
    )


async def _exists(client: Client, who: str) -> bool:
    try:
        await client.get_workflow_handle(entity_id(who)).describe()
    except Exception:
        return False
    return True


async def test_budget_refuses_without_a_principal_or_an_amount(client: Client) -> None:
    spec = budget(limit=10, task_queue="unused")
    resources = Resources(extra={"temporal_client": client})
    nobody = await run_pass(
        [spec], Subject(placement="tool-args", tool="pay", value={"amount": 1}), resources
    )
    assert nobody.verdict.action == "deny" and "no principal" in (nobody.verdict.reason or "")
    no_amount = await run_pass(
        [spec],
        Subject(
            placement="tool-args",
            tool="pay",
            value={"amount": "lots"},
            context=Context(principal="ana"),
        ),
        resources,
    )
    assert no_amount.verdict.action == "deny"
    assert "'amount' is not a number" in (no_amount.verdict.reason or "")


async def test_budget_without_a_client_fails_closed() -> None:
    spec = budget(limit=10, task_queue="q")
    result = await run_pass(
        [spec],
        Subject(
            placement="tool-args", tool="pay", value={"amount": 1}, context=Context(principal="ana")
        ),
        Resources(),
    )
    assert result.verdict.action == "deny" and result.verdict.outcome == "partial"
    assert "temporal_client" in (result.verdict.reason or "")


async def test_the_entity_continues_as_new_and_keeps_its_books(client: Client) -> None:
    queue, who = f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=1000, tools=["pay"], max_history=25)
    async with _worker(client, queue):
        for _ in range(6):
            _, out = await _pay(client, queue, who, PayInput(spec=spec, amount=10))
            assert out.ran
        entity = client.get_workflow_handle(entity_id(who))
        state = await _state(client, who)
        desc = await entity.describe()
    assert state.accounts["budget"].spent == 60
    assert desc.run_id != desc.raw_description.workflow_execution_info.first_run_id
    await replay(entity, WORKFLOWS, "tests")


@pytest.fixture(scope="module")
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    started = await start_time_skipping()
    try:
        yield started
    finally:
        await started.shutdown()


async def test_the_budget_resets_on_the_period_boundary(time_env: WorkflowEnvironment) -> None:
    client = duraguard_client(time_env)
    queue, who = f"budget-{uuid.uuid4()}", _who()
    spec = budget(limit=100, period="day", tools=["pay"])
    async with _worker(client, queue):
        _, first = await _pay(client, queue, who, PayInput(spec=spec, amount=60))
        _, refused = await _pay(client, queue, who, PayInput(spec=spec, amount=60))
        await time_env.sleep(timedelta(days=1))
        h2, next_day = await _pay(client, queue, who, PayInput(spec=spec, amount=60))
        state = await _state(client, who)
    assert first.ran
    assert not refused.allowed and "resets at" in (refused.reason or "")
    assert next_day.ran
    assert state.accounts["budget"].spent == 60
    await replay(h2, WORKFLOWS, "tests")
    await replay(client.get_workflow_handle(entity_id(who)), WORKFLOWS, "tests")


async def test_a_check_that_gives_up_mid_reserve_leaves_no_hold_that_nothing_would_settle(
    client: Client,
) -> None:
    """A check that times out while its reserve update is under way is refused (fails closed).
    Either its refusal carries the reservation marked abandoned (the check's own bound ran out;
    the loop releases what a refused call holds), or it was cancelled from outside and withdraws
    the hold itself; in whichever order the reserve and the release reach the entity, every hold
    left is one an allowed verdict carries."""
    queue, who = f"budget-{uuid.uuid4()}", _who()
    resources = Resources(extra={"temporal_client": client})
    # Spread around the time a reserve takes here, so some give up with it under way.
    waits = [0.002 * 1.25**i for i in range(24)] + [10.0] * 4

    async def one(i: int, timeout: float) -> PassResult:
        spec = budget(limit=10_000, task_queue=queue, timeout=timeout)
        subject = Subject(
            placement="tool-args",
            tool="pay",
            value={"amount": 5},
            call_id=f"c{i}",
            context=Context(principal=who, workflow_id=f"w-{uuid.uuid4().hex[:6]}"),
        )
        return await run_pass([spec], subject, resources)

    async with _worker(client, queue, workflows=BUDGET_WORKFLOWS):
        results = await asyncio.gather(*(one(i, t) for i, t in enumerate(waits)))
        gave_up = [r for r in results if r.tripped]
        # What a loop does with a refused call: release what its verdicts carry.
        entity = client.get_workflow_handle(entity_id(who))
        abandoned = [r for res in gave_up for r in reservations_of(res.verdicts)]
        for r in abandoned:
            # Sent again where a failed workflow task of the entity aborted it (a server race
            # under load), as the loop's release activity does.
            await send_update(entity, BudgetWorkflow.release, SettleRequest(reservation=r), id=r.id)
        carried = {
            r.id for res in results if not res.tripped for r in reservations_of(res.verdicts)
        }
        # A reserve still in flight lands (and takes nothing); a loaded machine makes the entity's
        # workflow tasks time out, and an update they held is tried again: wait for it to settle.
        state = await _state(client, who)
        for _ in range(120):
            if set(state.accounts["budget"].holds) == carried:
                break
            await asyncio.sleep(0.25)
            state = await _state(client, who)
    assert gave_up, "no check timed out mid-reserve: the test proves nothing"
    assert all("could not decide" in (r.verdict.reason or "") for r in gave_up)
    assert all(r.data.get("abandoned") for r in abandoned)
    assert len(carried) == len(results) - len(gave_up) >= 2
    left = set(state.accounts["budget"].holds)
    if left != carried:
        # Seen in full runs of the suite and once beside stress, before the engine carried a
        # late verdict's reservation on its refusal (a reserve answered in time, its verdict
        # late when the loop was held up). If seen again: what the entity was sent and what
        # failed its tasks, for the next reader.
        told = await _entity_story(client, who, left ^ carried)
        raise AssertionError(f"holds {sorted(left)} != carried {sorted(carried)}\n{told}")
    assert state.accounts["budget"].held == 5 * len(carried)


async def test_a_check_the_engine_cuts_off_mid_reserve_refuses_carrying_its_hold(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop held up past the check's own bound (a loaded worker) lets the engine's deadline
    cancel the check while its reserve is under way. The engine's refusal carries the hold the
    entity may have taken, marked abandoned, so the loop gives it back as it does any refused
    call's: the entity keeps no hold that nothing settles, whether the reserve lands before the
    release or after it, and without the check's own best-effort withdraw (turned off here)."""
    # The check's own bound past the engine's deadline, as a held-up loop makes it.
    monkeypatch.setattr(budget_module, "_reserve_within", lambda timeout: timeout * 1000)

    async def no_withdraw(*_args: Any) -> None:
        return None

    monkeypatch.setattr(budget_module, "_withdraw", no_withdraw)
    real_reserve, in_flight = budget_module._reserve, []

    async def under_way(*args: Any) -> Any:
        # The reserve goes on after the check is cancelled, and lands when it lands.
        in_flight.append(asyncio.ensure_future(real_reserve(*args)))
        await asyncio.sleep(0.2)  # past the check's deadline: cancelled here, the reserve sent
        return await asyncio.shield(in_flight[-1])

    queue, who = f"budget-{uuid.uuid4()}", _who()
    resources = Resources(extra={"temporal_client": client})

    def subject(call: str) -> Subject:
        ctx = Context(principal=who, workflow_id=f"w-{uuid.uuid4().hex[:6]}")
        return Subject(
            placement="tool-args", tool="pay", value={"amount": 5}, call_id=call, context=ctx
        )

    async with _worker(client, queue, workflows=BUDGET_WORKFLOWS):
        first = await run_pass([budget(limit=100, task_queue=queue)], subject("c0"), resources)
        (kept,) = reservations_of(first.verdicts)  # the entity runs now
        monkeypatch.setattr(budget_module, "_reserve", under_way)
        entity = client.get_workflow_handle(entity_id(who))
        for landed_first in (True, False):
            cut = await run_pass(
                [budget(limit=100, task_queue=queue, timeout=0.05)], subject("c1"), resources
            )
            assert cut.tripped and cut.verdict.outcome == "partial", cut.verdict
            assert [d.rule for d in cut.verdict.detections] == ["guardrail.timeout"]
            (r,) = reservations_of(cut.verdicts)
            assert r.data.get("abandoned") and r.id != kept.id
            release = SettleRequest(reservation=r)
            if landed_first:
                await in_flight[-1]  # the entity took the hold: nothing but the release frees it
                assert len((await _state(client, who)).accounts["budget"].holds) == 2
            await send_update(entity, BudgetWorkflow.release, release, id=r.id)
            await in_flight[-1]  # landed before the release or after it: refused then
            state = await _state(client, who)
            assert set(state.accounts["budget"].holds) == {kept.id}, landed_first
    assert state.accounts["budget"].held == 5


async def _entity_story(client: Client, who: str, ids: set[str]) -> str:
    """The budget entity's history, as far as it concerns ``ids``: its failed workflow tasks and
    the updates that name one of them, in order."""
    from temporalio.api.enums.v1 import EventType

    history = await client.get_workflow_handle(entity_id(who)).fetch_history()
    lines = []
    for e in history.events:
        kind = EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")
        if e.HasField("workflow_task_failed_event_attributes"):
            f = e.workflow_task_failed_event_attributes
            lines.append(f"{e.event_id} {kind} {f.cause} {f.failure.message[:160]}")
        elif "UPDATE" in kind:
            text = str(e)
            if any(i in text for i in ids):
                name = next((i for i in ids if i in text), "")
                lines.append(f"{e.event_id} {kind} {name} {text[text.find('update_id') :][:80]!r}")
    return "\n".join(lines)


async def test_withdrawing_a_hold_respects_which_run_of_the_check_claims_it(
    client: Client,
) -> None:
    """The entity's side of a check that gave up: a withdrawal takes the hold only from the
    run of the check that still claims it; a retry re-claims; a reserve arriving after its own
    withdrawal takes nothing; a commit after a release still counts what was spent."""
    from duraguard._budget_activities import _entity
    from duraguard._budget_entity import BudgetWorkflow, ReserveRequest, SettleRequest
    from duraguard._types import Reservation

    queue, who = f"budget-{uuid.uuid4()}", _who()

    def ask(rid: str, claim: int) -> ReserveRequest:
        return ReserveRequest(id=rid, account="budget", amount=10, limit=100, claim=claim)

    def settling(rid: str, claim: int | None = None) -> SettleRequest:
        reservation = Reservation(resource="budget", id=rid, data={"principal": who, "amount": 10})
        return SettleRequest(reservation=reservation, claim=claim)

    async with _worker(client, queue, workflows=BUDGET_WORKFLOWS):
        entity = await _entity(client, who, queue, 0)

        async def reserve(rid: str, claim: int) -> bool:
            req = ask(rid, claim)
            return (await entity.execute_update(BudgetWorkflow.reserve, req)).ok

        async def release(rid: str, claim: int | None = None) -> str:
            got = await entity.execute_update(BudgetWorkflow.release, settling(rid, claim))
            return got.outcome

        # Taken by run 1, withdrawn by run 1; run 1's reserve arriving late takes nothing,
        # a new run (a retry) may reserve afresh.
        assert await reserve("a", 1)
        assert await release("a", 1) == "released"
        assert not await reserve("a", 1)
        assert "a" not in (await _state(client, who)).accounts["budget"].holds
        assert await reserve("a", 2)
        # Taken by run 1, re-claimed by its retry (run 2): run 1's withdrawal keeps it.
        assert await reserve("b", 1) and await reserve("b", 2)
        assert await release("b", 1) == "kept"
        # Withdrawn before its reserve arrived: the reserve takes nothing.
        assert await release("c", 1) == "unknown"
        assert not await reserve("c", 1)
        state = await _state(client, who)
        assert set(state.accounts["budget"].holds) == {"a", "b"}
        assert state.accounts["budget"].held == 20
        # The call's recorded verdict is a check that gave up: its release (marked abandoned)
        # takes the hold whichever run claims it, and a reserve arriving later takes nothing.
        assert await reserve("d", 7)
        gone = settling("d")
        gone = gone.model_copy(
            update={
                "reservation": gone.reservation.model_copy(update={"data": {"abandoned": True}})
            }
        )
        assert (await entity.execute_update(BudgetWorkflow.release, gone)).outcome == "released"
        assert not await reserve("d", 7) and not await reserve("d", 8)
        assert set((await _state(client, who)).accounts["budget"].holds) == {"a", "b"}
        # A hold released, then committed (the tool did run): what was spent counts.
        assert await release("b") == "released"
        committed = await entity.execute_update(BudgetWorkflow.commit, settling("b"))
        assert committed.outcome == "late" and committed.spent == 10
        again = await entity.execute_update(BudgetWorkflow.commit, settling("b"))
        assert again.outcome == "already" and again.spent == 10
    await replay(entity, WORKFLOWS, "tests")
