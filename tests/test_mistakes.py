"""The first hour's mistakes surface at once, with their fix (issue 25, item 5): a typo in
``tools=[...]``, a model written without its provider, a worker script without its
``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError

from duraguard import schema
from duraguard._mistakes import unguarded_run, unknown_model, unknown_tools
from duraguard.checks import policy
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, make_harness

ROOT = Path(__file__).resolve().parent.parent


def test_a_tool_name_no_worker_has_is_named_with_the_closest_one() -> None:
    err = unknown_tools(["lookup", "refnd"], ["lookup", "refund", "send_email"])
    assert err is not None and err.non_retryable
    assert (
        "names 'refnd', which is not a tool on this worker; did you mean 'refund'?" in err.message
    )
    assert "registers: lookup, refund, send_email" in err.message
    assert unknown_tools(["lookup"], ["lookup"]) is None
    far = unknown_tools(["zzz"], ["lookup"])
    assert (
        far is not None and "worker. DuraguardPlugin(tools=[...]) registers: lookup" in far.message
    )


def test_a_model_without_its_provider_is_told_how_to_write_it() -> None:
    bare = unknown_model("pay", ["scripted"])
    assert "model='pay' names no provider: write it as 'provider:model', e.g. 'scripted:pay'" in (
        bare.message
    )
    typo = unknown_model("opneai:gpt-4.1", ["openai", "scripted"])
    assert "no model provider 'opneai'" in typo.message and "did you mean 'openai'?" in typo.message


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import asyncio\nasync def main(): ...\nasyncio.run(main())\n", 3),
        ("import sys, asyncio\nsys.exit(asyncio.run(main()))\n", 2),
        ("main()\n", 1),
        ("if True:\n    asyncio.run(main())\n", 1),
    ],
)
def test_a_script_that_runs_itself_at_module_level_is_found(source: str, line: int) -> None:
    found = unguarded_run(source)
    assert found is not None and found[0] == line


@pytest.mark.parametrize(
    "source",
    [
        'import asyncio\nif __name__ == "__main__":\n    asyncio.run(main())\n',
        "import logging\nlogging.basicConfig(level=logging.INFO)\nMODELS = make()\n",
        "def main():\n    asyncio.run(go())\n",
    ],
)
def test_a_guarded_script_and_ordinary_module_code_are_left_alone(source: str) -> None:
    assert unguarded_run(source) is None


@pytest.fixture(scope="module")
async def h(temporal_env: Any) -> Any:
    return await make_harness(temporal_env)


@pytest.mark.parametrize("with_policy", [True, False])
async def test_a_typo_in_tools_fails_the_run_at_its_first_model_step_naming_it(
    h: Any, with_policy: bool
) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("lookp", {"order_id": "A1"})), answer("done"))
    guards = [schema(), policy()] if with_policy else [schema()]
    spec = AgentInput(prompt="where is A1", model=model, tools=["lookp"], guardrails=guards)
    run = await h.run(AgentWorkflow.run, spec, expect_failure=True)
    assert isinstance(run.result, WorkflowFailureError)  # not a run that ends done, silently
    cause = run.result.cause
    while getattr(cause, "cause", None) is not None:
        cause = cause.cause
    assert "names 'lookp', which is not a tool on this worker; did you mean 'lookup'?" in str(cause)
    assert TOOL_LOG == [] and "lookp" not in run.activity_names()


async def test_a_model_without_a_provider_fails_the_run_saying_how_to_write_it(h: Any) -> None:
    spec = AgentInput(prompt="hi", model="pay", tools=["lookup"], guardrails=[schema()])
    run = await h.run(AgentWorkflow.run, spec, expect_failure=True)
    cause = run.result.cause
    while getattr(cause, "cause", None) is not None:
        cause = cause.cause
    assert "model='pay' names no provider" in str(cause) and "'scripted:pay'" in str(cause)


SCRIPT = """
import asyncio
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.server import DevServer


@workflow.defn
class Agent:
    @workflow.run
    async def run(self) -> str:
        return "ok"


async def main() -> None:
    async with DevServer(ui=False) as srv:
        client = await Client.connect(srv.address, plugins=[duraguard.DuraguardPlugin()])
        async with Worker(client, task_queue="q", workflows=[Agent]):
            print("worker up")


{tail}
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_worker_script_without_its_main_guard_is_refused_saying_where_and_how(
    tmp_path: Path, guarded: bool
) -> None:
    tail = (
        'if __name__ == "__main__":\n    asyncio.run(main())' if guarded else "asyncio.run(main())"
    )
    script = tmp_path / "my_worker.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("{tail}", tail))
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if guarded:
        assert out.returncode == 0 and "worker up" in out.stdout, out.stderr
        return
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("duraguard.errors.ConfigurationError: workflow Agent is defined in")
    assert "runs `asyncio.run(main())` at line" in last
    assert 'Put it under `if __name__ == "__main__":`' in last
