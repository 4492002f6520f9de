"""DuraguardPlugin shares a client with the OpenAI agents plugin and with Pydantic AI's, in
either order: one worker runs a workflow that makes a duraguard ``guarded_call`` and runs the
framework's agent with its test model, on the real dev server; the history then replays with
both plugins and no guardrail is asked again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

import duraguard
from tests._harness import Counting, lookup

from ._frameworks import connect, replay, run

ORDERS = ["duraguard-first", "duraguard-last"]


def _ordered(order: str, guard: Any, other: Any) -> list[Any]:
    return [guard, other] if order == "duraguard-first" else [other, guard]


def _guard() -> tuple[duraguard.DuraguardPlugin, Counting]:
    counting = Counting()
    return duraguard.DuraguardPlugin(tools=[lookup], guardrails=[counting]), counting


@pytest.mark.parametrize("order", ORDERS)
async def test_openai_agents_plugin_and_duraguard_share_a_client(
    temporal_env: WorkflowEnvironment, order: str
) -> None:
    pytest.importorskip(
        "agents", reason="install the extra: pip install 'duraguard[openai-agents]'"
    )
    from temporalio.openai_agents import (
        ModelActivityParameters,
        OpenAIAgentsPlugin,
        OpenAIPayloadConverter,
    )
    from temporalio.openai_agents.testing import TestModelProvider

    from ._openai_agents import (
        AgentRun,
        OpenAIAgentBesideGuardedCall,
        ScriptedAgentModel,
        lookup_order,
    )

    guard, counting = _guard()
    agents = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(ScriptedAgentModel()),
    )
    client = connect(temporal_env, _ordered(order, guard, agents))
    assert client.data_converter.payload_converter_class is OpenAIPayloadConverter

    ran = await run(
        client,
        OpenAIAgentBesideGuardedCall.run,
        [counting.spec()],
        workflows=[OpenAIAgentBesideGuardedCall],
        activities=[lookup_order],
        result_type=AgentRun,
    )
    assert ran.result.final_output == "done after 2 calls"
    assert [o[:18] for o in ran.result.tool_outputs] == [
        '{"order_id": "A1",',
        '{"order_id": "A0",',
        '{"order_id": "A1",',
    ]
    names = ran.activity_names()
    # The guarded call: one step, its tool's, which judges its arguments and its result.
    assert names[0] == "lookup" and "duraguard.check" not in names
    assert names.count("invoke_model_activity") == 3 and names.count("lookup_order") == 1
    assert counting.calls == 2

    before = (guard.checks_run, counting.calls)
    # A Replayer cannot tell duraguard that the OpenAI plugin comes next: there the OpenAI
    # plugin goes first (see test_on_a_replayer_the_openai_agents_plugin_goes_first).
    await replay(ran.history, workflows=[OpenAIAgentBesideGuardedCall], plugins=[agents, guard])
    assert (guard.checks_run, counting.calls) == before, "replay ran a check again"


async def test_on_a_replayer_the_openai_agents_plugin_goes_first() -> None:
    """The OpenAI plugin refuses any converter but the default, its own included (its isinstance
    check meets the SDK's wrapper); a Replayer gives duraguard no list of the plugins after it,
    so duraguard there installs pydantic's and the OpenAI plugin after it refuses. If this starts
    passing the Replayer, drop the note in DuraguardPlugin.configure_replayer and docs."""
    pytest.importorskip("agents")
    from temporalio.openai_agents import OpenAIAgentsPlugin

    from tests._servers import Replayer

    from ._openai_agents import OpenAIAgentWorkflow

    guard, _ = _guard()
    with pytest.raises(ValueError, match="must be of type OpenAIPayloadConverter"):
        Replayer(workflows=[OpenAIAgentWorkflow], plugins=[guard, OpenAIAgentsPlugin()])
    Replayer(workflows=[OpenAIAgentWorkflow], plugins=[OpenAIAgentsPlugin(), guard])


@pytest.mark.parametrize("order", ORDERS)
async def test_pydantic_ai_plugin_and_duraguard_share_a_client(
    temporal_env: WorkflowEnvironment, order: str
) -> None:
    pytest.importorskip(
        "pydantic_ai", reason="install the extra: pip install 'duraguard[pydantic-ai]'"
    )
    from pydantic_ai.durable_exec.temporal import PydanticAIPayloadConverter, PydanticAIPlugin

    from ._pydantic_ai import AgentRun, PydanticAIAgentBesideGuardedCall

    guard, counting = _guard()
    pydantic_ai = PydanticAIPlugin()
    plugins = _ordered(order, guard, pydantic_ai)
    client = connect(temporal_env, plugins)
    assert client.data_converter.payload_converter_class is PydanticAIPayloadConverter

    ran = await run(
        client,
        PydanticAIAgentBesideGuardedCall.run,
        [counting.spec()],
        workflows=[PydanticAIAgentBesideGuardedCall],
        result_type=AgentRun,
    )
    assert ran.result.final_output == "done after 2 calls"
    assert [o[:18] for o in ran.result.tool_outputs] == [
        '{"order_id": "A1",',
        '{"order_id": "A0",',
        '{"order_id": "A1",',
    ]
    names = ran.activity_names()
    assert names[0] == "lookup" and "duraguard.check" not in names
    assert names.count("agent__support__model_request") == 3
    assert counting.calls == 2

    before = (guard.checks_run, counting.calls)
    await replay(ran.history, workflows=[PydanticAIAgentBesideGuardedCall], plugins=plugins)
    assert (guard.checks_run, counting.calls) == before, "replay ran a check again"


def test_a_converter_that_cannot_carry_pydantic_models_is_still_refused_after_another_plugin() -> (
    None
):
    """Deferring to a later plugin happens only where that plugin installs a pydantic converter."""
    import dataclasses

    import temporalio.converter
    from temporalio.client import ClientConfig
    from temporalio.plugin import SimplePlugin

    class Plain(temporalio.converter.DefaultPayloadConverter):
        pass

    plain = SimplePlugin(
        "plain",
        data_converter=lambda c: dataclasses.replace(
            c or temporalio.converter.DataConverter.default, payload_converter_class=Plain
        ),
    )
    guard, _ = _guard()
    config: ClientConfig = {"plugins": [guard, plain]}  # type: ignore[typeddict-item]
    out = guard.configure_client(config)
    # The plain plugin would not carry pydantic models, so duraguard installs pydantic's now;
    # whatever the plain plugin does next is on it.
    from temporalio.contrib.pydantic import PydanticPayloadConverter

    assert out["data_converter"].payload_converter_class is PydanticPayloadConverter
    with pytest.raises(duraguard.ConfigurationError, match="Plain"):
        guard.configure_client({"plugins": [plain, guard], **plain.configure_client({})})  # type: ignore[typeddict-item]
