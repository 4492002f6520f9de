"""Issue 24, class 8: what an operator can get wrong never leaves runs stuck in silence.

* ``search_attributes=True`` on a namespace where duraguard's search attributes are not
  registered (or registered with another type): the worker refuses to start, naming the
  command that registers them. Before, every run that parked or refused a call failed its
  workflow task on the upsert, for ever, with WARN lines only.
* Turning ``search_attributes`` on or off: a run keeps the choice it started with (its patch
  marker says which), so runs already recorded replay and go on, on a worker either way.
* A worker built without ``DuraguardPlugin``: it refuses to start where the sandbox would import
  duraguard, naming the plugin; where the workflow's module passes duraguard through itself,
  the run's workflow task fails naming the plugin, and the run goes on once a worker with it
  takes the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

import duraguard
from duraguard._startup import check_search_attributes
from duraguard._wire import DECIDE, SA_PENDING
from duraguard.approvals import ApprovalCheck
from duraguard.errors import ConfigurationError
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, GuardedCallWorkflow, approver_decision
from tests._servers import Replayer

from ._harness import TOOL_LOG, Harness, make_harness, parked
from ._noplugin_workflows import Plain
from ._passed_workflows import PassedThrough
from ._servers import start_dev_server
from .test_approvals import KEYS, NEEDS, PRIVATE, NeedsManager

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
async def bare_env() -> Any:
    """A dev server of its own, with none of duraguard's search attributes registered."""
    env = await start_dev_server()
    try:
        yield env
    finally:
        await env.shutdown()


async def _refuses_to_start(h: Harness) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as refused:
        async with h.worker(f"tq-{uuid.uuid4().hex[:8]}"):
            await asyncio.sleep(30)  # the worker's start fails first, and ends this block
    return refused.value


async def test_search_attributes_on_a_namespace_without_them_refuse_to_start_naming_the_fix(
    bare_env: Any,
) -> None:
    h = await make_harness(bare_env, search_attributes=True)
    err = await _refuses_to_start(h)
    text = str(err)
    assert "DuraguardPending (Int)" in text and "DuraguardHaltedBy (Keyword)" in text
    assert "temporal operator search-attribute create --namespace default" in text
    assert "search_attributes=False" in text
    # Without search attributes, the same server runs the same worker.
    plain = await make_harness(bare_env)
    async with plain.worker(f"tq-{uuid.uuid4().hex[:8]}"):
        pass


async def test_a_search_attribute_registered_with_another_type_is_refused_at_start() -> None:
    env = await start_dev_server()
    try:
        await env.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace="default",
                search_attributes={
                    SA_PENDING: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
                    "DuraguardHaltedBy": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
                    "DuraguardDenials": IndexedValueType.INDEXED_VALUE_TYPE_INT,
                },
            )
        )
        h = await make_harness(env, search_attributes=True)
        err = await _refuses_to_start(h)
        assert "DuraguardPending (Int)" in str(err) and "DuraguardDenials" not in str(err)
    finally:
        await env.shutdown()


async def test_a_server_that_does_not_answer_the_question_is_retried_then_warned_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """CI once saw a worker's start fail on a busy dev server's answer to the question; a
    server that does not answer is asked again as the SDK asks (about ten seconds), then
    warned about: the worker's own polls wait for it as they always do."""
    env = await start_dev_server()
    client = env.client
    await env.shutdown()
    with caplog.at_level(logging.WARNING, logger="duraguard"):
        await check_search_attributes(client)
    said = [r.getMessage() for r in caplog.records if r.name == "duraguard"]
    assert any("(UNAVAILABLE)" in m and "DuraguardPending" in m for m in said), said


def _asked(h: Harness) -> AgentInput:
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    return AgentInput(prompt="refund A2", model=model, tools=["refund"], guardrails=[NEEDS])


def _plugin(h: Harness, *, search_attributes: bool) -> duraguard.DuraguardPlugin:
    """A plugin like ``h``'s (the same scripted models), with the other setting."""
    return duraguard.DuraguardPlugin(
        tools=list(h.plugin.resources.tools.values()),
        models={"scripted": h.scripts},
        guardrails=[NeedsManager()],
        approvers=KEYS,
        search_attributes=search_attributes,
    )


def _upserts(history: Any) -> int:
    """Upserts of duraguard's search attributes (the SDK upserts its own TemporalChangeVersion
    with a patch marker)."""
    return sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
        and SA_PENDING
        in e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
    )


@pytest.mark.parametrize("started_on", [True, False], ids=["on-then-off", "off-then-on"])
async def test_turning_search_attributes_on_or_off_changes_new_runs_only(
    temporal_env: Any, started_on: bool
) -> None:
    """A run parks on a worker with one setting; a worker with the other takes it over (it
    replays the run's history, upserts and all), the person says yes, the run ends; its
    history replays on a worker either way, and a run started there follows the new setting."""
    TOOL_LOG.clear()
    first = await make_harness(temporal_env, guardrails=[NeedsManager()], approvers=KEYS,
                               search_attributes=started_on)  # fmt: skip
    second = _plugin(first, search_attributes=not started_on)
    config = temporal_env.client.config()
    config["plugins"] = [second]
    other = Client(**config)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with first.worker(tq):
        handle = await first.start(AgentWorkflow.run, _asked(first), task_queue=tq)
        (ask,) = await parked(handle)
    async with Worker(other, task_queue=tq, workflows=list(first.workflows),
                      max_cached_workflows=0):  # fmt: skip
        good = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
        assert (await handle.execute_update(DECIDE, good, result_type=ApprovalCheck)).ok
        result = await handle.result()
        fresh = await first.start(AgentWorkflow.run, _asked(first), task_queue=tq)
        (fresh_ask,) = await parked(fresh)
        yes = approver_decision(fresh_ask, approver="alice", private_key=PRIVATE["alice"])
        assert (await fresh.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        await fresh.result()
    assert result.stop_reason == "done"
    history = await handle.fetch_history()
    assert not [e for e in history.events if e.HasField("workflow_task_failed_event_attributes")]
    assert (_upserts(history) > 0) is started_on
    assert (_upserts(await fresh.fetch_history()) > 0) is (not started_on)
    before = first.plugin.checks_run + second.checks_run
    for plugin in (first.plugin, second):
        await Replayer(workflows=list(first.workflows), plugins=[plugin]).replay_workflow(history)
    assert first.plugin.checks_run + second.checks_run == before
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})] * 2


def _bare_client(env: Any) -> Client:
    return Client(**{**env.client.config(), "data_converter": pydantic_data_converter})


@pytest.mark.parametrize("workflow", [Plain, GuardedCallWorkflow])
def test_a_worker_without_the_plugin_refuses_to_start_naming_it(
    temporal_env: Any, workflow: type
) -> None:
    with pytest.raises(RuntimeError, match="Failed validating workflow") as refused:
        Worker(_bare_client(temporal_env), task_queue="never", workflows=[workflow])
    cause = refused.value.__cause__
    assert isinstance(cause, ImportError) and "without DuraguardPlugin" in str(cause)
    assert "plugins=[duraguard.DuraguardPlugin(...)]" in str(cause)


# The SDK warns first that a module was imported after the workflow loaded (outside a test,
# where warnings are not errors, the import then fails with the message that names the plugin).
@pytest.mark.filterwarnings("ignore:Module duraguard.* was imported after initial workflow load")
async def test_a_run_on_a_worker_without_the_plugin_names_it_and_goes_on_with_one(
    temporal_env: Any,
) -> None:
    """The workflow's module passes duraguard through, so the worker starts; the run's first
    call imports the rest of duraguard in the sandbox, and its workflow task fails naming the
    plugin (retried, not failed). A worker with the plugin then takes the run to its end."""
    TOOL_LOG.clear()
    h = await make_harness(temporal_env, workflows=[PassedThrough])
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with Worker(_bare_client(temporal_env), task_queue=tq, workflows=[PassedThrough]):
        handle = await h.client.start_workflow(
            PassedThrough.run, id=f"wf-{uuid.uuid4().hex[:8]}", task_queue=tq,
            execution_timeout=timedelta(seconds=90),
        )  # fmt: skip
        failure = await _task_failure(handle)
    assert "without DuraguardPlugin" in failure and "plugins=[" in failure, failure
    async with h.worker(tq):
        assert await handle.result() == {"ran": True}
    assert TOOL_LOG == [("lookup", {"order_id": "A1"})]
    await h.replay(await handle.fetch_history())


async def _task_failure(handle: Any) -> str:
    for _ in range(400):
        for e in (await handle.fetch_history()).events:
            if e.HasField("workflow_task_failed_event_attributes"):
                return str(e.workflow_task_failed_event_attributes.failure.message)
        await asyncio.sleep(0.05)
    raise AssertionError("no workflow task failed")
