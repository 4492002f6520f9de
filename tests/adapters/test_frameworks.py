"""The unguarded framework agents the adapters will guard: each runs on the real dev server with
its own test model and replays with the Replayer. The history each framework's loop writes per
tool call is printed (not asserted), for the record in docs/adapters.md."""

from __future__ import annotations

import pytest
from temporalio.testing import WorkflowEnvironment

from .._printed import printed
from ._frameworks import per_call, replay, run

pytestmark = pytest.mark.timeout(240)


def _openai_plugin():  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import TestModelProvider

    from ._openai_agents import ScriptedAgentModel

    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(ScriptedAgentModel()),
    )


async def test_openai_agent_calls_an_activity_tool_and_a_function_tool_then_replays(
    temporal_env: WorkflowEnvironment,
) -> None:
    pytest.importorskip(
        "agents", reason="install the extra: pip install 'duraguard[openai-agents]'"
    )
    from ._frameworks import connect
    from ._openai_agents import AgentRun, OpenAIAgentWorkflow, lookup_order

    plugin = _openai_plugin()
    client = connect(temporal_env, [plugin])
    ran = await run(
        client, OpenAIAgentWorkflow.run, 4, workflows=[OpenAIAgentWorkflow],
        activities=[lookup_order], result_type=AgentRun,
    )  # fmt: skip
    assert ran.result.final_output == "done after 4 calls", ran.result
    assert [o[:30] for o in ran.result.tool_outputs] == [
        '{"order_id": "A0", "amount": 2',
        '{"order_id": "A1", "refund": 2',
        '{"order_id": "A2", "amount": 2',
        '{"order_id": "A3", "refund": 2',
    ]
    # Model turns and the activity tool are activities; the function tool ran in workflow code.
    names = ran.activity_names()
    assert names.count("invoke_model_activity") == 5
    assert names.count("lookup_order") == 2
    assert "quote_refund" not in names
    await replay(ran.history, workflows=[OpenAIAgentWorkflow], plugins=[plugin])


async def test_pydantic_ai_agent_calls_two_tools_then_replays(
    temporal_env: WorkflowEnvironment,
) -> None:
    pytest.importorskip(
        "pydantic_ai", reason="install the extra: pip install 'duraguard[pydantic-ai]'"
    )
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    from ._frameworks import connect
    from ._pydantic_ai import AgentRun, PydanticAIAgentWorkflow

    plugin = PydanticAIPlugin()
    client = connect(temporal_env, [plugin])
    ran = await run(
        client, PydanticAIAgentWorkflow.run, 4, workflows=[PydanticAIAgentWorkflow],
        result_type=AgentRun,
    )  # fmt: skip
    assert ran.result.final_output == "done after 4 calls"
    assert [o[:30] for o in ran.result.tool_outputs] == [
        '{"order_id": "A0", "amount": 2',
        '{"order_id": "A1", "refund": 2',
        '{"order_id": "A2", "amount": 2',
        '{"order_id": "A3", "refund": 2',
    ]
    print("pydantic-ai activities:", sorted(set(ran.activity_names())))
    await replay(ran.history, workflows=[PydanticAIAgentWorkflow], plugins=[plugin])


async def test_history_per_tool_call_of_each_framework_loop(
    temporal_env: WorkflowEnvironment, request: pytest.FixtureRequest
) -> None:
    """Printed for the record: events and bytes per tool call between 10 and 40 calls."""
    pytest.importorskip("agents")
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

    from ._frameworks import connect
    from ._openai_agents import AgentRun as OARun
    from ._openai_agents import OpenAIAgentWorkflow, lookup_order
    from ._pydantic_ai import AgentRun as PARun
    from ._pydantic_ai import PydanticAIAgentWorkflow

    oa = connect(temporal_env, [_openai_plugin()])
    pa = connect(temporal_env, [PydanticAIPlugin()])
    sizes = (10, 40)  # per call: the difference between the two, over 30 calls
    oa_runs = [
        await run(oa, OpenAIAgentWorkflow.run, n, workflows=[OpenAIAgentWorkflow],
                  activities=[lookup_order], result_type=OARun)
        for n in sizes
    ]  # fmt: skip
    pa_runs = [
        await run(pa, PydanticAIAgentWorkflow.run, n, workflows=[PydanticAIAgentWorkflow],
                  result_type=PARun)
        for n in sizes
    ]  # fmt: skip
    for n, r in zip(sizes, oa_runs + pa_runs, strict=False):
        assert r.result.final_output == f"done after {n} calls"
    printed(request, f"OpenAI Agents SDK loop       {per_call(*oa_runs, sizes)}")
    printed(request, f"Pydantic AI loop             {per_call(*pa_runs, sizes)}")


async def test_history_per_tool_call_of_each_guarded_loop(
    temporal_env: WorkflowEnvironment, request: pytest.FixtureRequest
) -> None:
    """Printed for the record: the same loops guarded by the adapters (a pass on each call's
    arguments and one on its result, one on the prompt and one on the answer), same prompts."""
    pytest.importorskip("agents")
    pytest.importorskip("pydantic_ai")
    from datetime import timedelta

    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.testing import TestModelProvider

    import duraguard

    from ._frameworks import connect
    from ._guarded_openai import GuardedInput, GuardedOpenAIAgent, PlanModel, lookup_order
    from ._guarded_openai import GuardedOutcome as OAOut
    from ._guarded_pydantic import GuardedOutcome as PAOut
    from ._guarded_pydantic import GuardedPydanticAgent
    from ._rules import Rules

    rules = Rules()
    guard = duraguard.DuraguardPlugin(guardrails=[rules])
    agents = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(PlanModel()),
    )
    oa = connect(temporal_env, [agents, guard])
    pa = connect(temporal_env, [PydanticAIPlugin(), guard])
    sizes = (10, 40)  # per call: the difference between the two, over 30 calls
    oa_runs = [
        await run(oa, GuardedOpenAIAgent.run,
                  GuardedInput(prompt=f"Resolve ticket T1. calls={n}", guardrails=[rules.spec()],
                               max_turns=n + 2),
                  workflows=[GuardedOpenAIAgent], activities=[lookup_order], result_type=OAOut)
        for n in sizes
    ]  # fmt: skip
    pa_runs = [
        await run(pa, GuardedPydanticAgent.run, f"Resolve ticket T1. calls={n}",
                  workflows=[GuardedPydanticAgent], result_type=PAOut)
        for n in sizes
    ]  # fmt: skip
    for n, r in zip(sizes * 2, oa_runs + pa_runs, strict=True):
        assert (r.result.stop_reason, r.result.output) == ("done", f"done after {n} calls")
    printed(request, f"OpenAI Agents SDK, guarded   {per_call(*oa_runs, sizes)}")
    printed(request, f"Pydantic AI, guarded         {per_call(*pa_runs, sizes)}")
