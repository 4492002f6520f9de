"""The principal named at start reaches the workflow, its activities, children and next runs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from duraguard.errors import ConfigurationError
    from duraguard.principal import current_principal, principal
    from tests._servers import duraguard_client, replay, sandbox_runner, start_dev_server

TIMEOUT = timedelta(seconds=30)
ACT = timedelta(seconds=10)


@activity.defn(name="test.principal-async")
async def principal_async() -> str | None:
    return current_principal()


@activity.defn(name="test.principal-sync")
def principal_sync() -> str | None:
    return current_principal()


@workflow.defn(name="test.principal-child")
class ChildWorkflow:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        return {
            "workflow": current_principal(),
            "activity": await workflow.execute_activity(
                principal_async, start_to_close_timeout=ACT
            ),
        }


@workflow.defn(name="test.principal")
class PrincipalWorkflow:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        return {
            "workflow": current_principal(),
            "activity": await workflow.execute_activity(
                principal_async, start_to_close_timeout=ACT
            ),
            "sync_activity": await workflow.execute_activity(
                principal_sync, start_to_close_timeout=ACT
            ),
            "local_activity": await workflow.execute_local_activity(
                principal_async, start_to_close_timeout=ACT
            ),
            "child": await workflow.execute_child_workflow(
                ChildWorkflow.run, id=f"{workflow.info().workflow_id}-child"
            ),
        }


@workflow.defn(name="test.principal-next-run")
class NextRunWorkflow:
    @workflow.run
    async def run(self, runs_left: int) -> dict[str, Any]:
        if runs_left > 0:
            workflow.continue_as_new(runs_left - 1)
        return {
            "workflow": current_principal(),
            "activity": await workflow.execute_activity(
                principal_async, start_to_close_timeout=ACT
            ),
            "continued": workflow.info().continued_run_id is not None,
        }


WORKFLOWS = [PrincipalWorkflow, ChildWorkflow, NextRunWorkflow]


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


async def _run(client: Client, wf: Any, *args: Any, name: str | None) -> tuple[Any, Any]:
    queue = f"principal-{uuid.uuid4()}"
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        async with Worker(
            client,
            task_queue=queue,
            workflows=WORKFLOWS,
            activities=[principal_async, principal_sync],
            activity_executor=pool,
            workflow_runner=sandbox_runner("tests"),
        ):
            with principal(name):
                handle = await client.start_workflow(
                    wf,
                    *args,
                    id=f"wf-{uuid.uuid4()}",
                    task_queue=queue,
                    execution_timeout=TIMEOUT,
                )
            result = await handle.result()
    await replay(handle, WORKFLOWS, "tests")
    return handle, result


async def test_principal_reaches_workflow_activities_local_activity_and_child(
    client: Client,
) -> None:
    _, result = await _run(client, PrincipalWorkflow.run, name="ana")
    assert result == {
        "workflow": "ana",
        "activity": "ana",
        "sync_activity": "ana",
        "local_activity": "ana",
        "child": {"workflow": "ana", "activity": "ana"},
    }


async def test_principal_survives_continue_as_new(client: Client) -> None:
    _, result = await _run(client, NextRunWorkflow.run, 2, name="bo")
    assert result == {"workflow": "bo", "activity": "bo", "continued": True}


async def test_no_principal_named_means_none_everywhere(client: Client) -> None:
    _, result = await _run(client, PrincipalWorkflow.run, name=None)
    assert result == {
        "workflow": None,
        "activity": None,
        "sync_activity": None,
        "local_activity": None,
        "child": {"workflow": None, "activity": None},
    }


async def test_principal_of_the_start_call_wins_over_the_worker_surroundings(
    client: Client,
) -> None:
    # Workers started inside someone else's block must not lend that principal to the run.
    with principal("mallory"):
        _, result = await _run(client, PrincipalWorkflow.run, name="ana")
    assert result["activity"] == "ana" and result["child"]["workflow"] == "ana"


def test_principal_blocks_nest_and_restore() -> None:
    assert current_principal() is None
    with principal("ana"):
        with principal("bo"):
            assert current_principal() == "bo"
        assert current_principal() == "ana"
    assert current_principal() is None


def test_principal_must_be_a_non_empty_string() -> None:
    with pytest.raises(ConfigurationError, match="non-empty string"):
        with principal("  "):
            pass


async def test_principal_is_per_task() -> None:
    async def read(name: str) -> str | None:
        with principal(name):
            await asyncio.sleep(0)
            return current_principal()

    assert await asyncio.gather(read("a"), read("b")) == ["a", "b"]
