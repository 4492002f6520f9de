"""Verdicts on OpenTelemetry spans: with Temporal's TracingInterceptor on the client, each
guardrail pass's span (its step's ``RunActivity`` span) names the action, the guardrail, its
check and the outcome, and never the value judged nor the reason. On the real dev server, with
the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="install the extra: pip install 'duraguard[otel]'")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import duraguard
from duraguard._telemetry import record_pass
from duraguard.testing import CallInput, GuardedCallWorkflow
from duraguard.types import PassResult
from tests._harness import lookup
from tests._servers import Replayer

from ._rules import CARD, Rules


def _everything_said(spans: list[ReadableSpan]) -> str:
    said: list[Any] = []
    for span in spans:
        said.append(dict(span.attributes or {}))
        said.extend(dict(e.attributes or {}) for e in span.events)
    return json.dumps(said)


class NeverMasks(Rules):
    """The same rules, said never to mask (so they judge a call inside its tool's step): the
    card they would mask is refused instead."""

    replaces = False


async def _traced(
    temporal_env: WorkflowEnvironment, check_mode: str | None, rules: Rules | None = None
) -> tuple[list[ReadableSpan], Any, duraguard.DuraguardPlugin, Rules]:
    """Three calls (allowed, denied, masked) under ``rules``, traced; then replayed, judging nothing."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rules = rules or Rules()
    plugin = duraguard.DuraguardPlugin(tools=[lookup], guardrails=[rules])
    config = temporal_env.client.config()
    config["plugins"] = [plugin]
    config["interceptors"] = [TracingInterceptor(provider.get_tracer("duraguard-test"))]
    client = Client(**config)
    calls = [
        ("lookup", {"order_id": "A1"}),
        ("lookup", {"order_id": "DENY-secret-7"}),
        ("lookup", {"order_id": CARD}),
    ]
    queue = f"otel-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[GuardedCallWorkflow]):
        handle = await client.start_workflow(
            GuardedCallWorkflow.run,
            CallInput(calls=calls, guardrails=[rules.spec()], check_mode=check_mode),
            id=f"otel-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )
        result = await handle.result()
    last = "deny" if isinstance(rules, NeverMasks) else "mask"
    assert [r["action"] for r in result] == ["allow", "deny", last]
    spans = list(exporter.get_finished_spans())
    # Never a value or a reason, anywhere.
    said = _everything_said(spans)
    for secret in ("DENY-secret-7", "4111", "[card]", "carries", "ana@example.com"):
        assert secret not in said
    before = (plugin.checks_run, rules.calls)
    replayer = Replayer(workflows=[GuardedCallWorkflow], plugins=[plugin])
    await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=True)
    assert (plugin.checks_run, rules.calls) == before
    return spans, handle, plugin, rules


async def test_each_pass_span_carries_its_verdict_and_no_value_or_reason(
    temporal_env: WorkflowEnvironment,
) -> None:
    spans, handle, _, _ = await _traced(temporal_env, "local")
    checks = [s for s in spans if s.name == "RunActivity:duraguard.check"]
    assert [
        (s.attributes["duraguard.action"], s.attributes.get("duraguard.guardrail"))  # type: ignore[index]
        for s in checks
    ] == [("allow", None), ("deny", "rules"), ("mask", "rules")]
    denied = checks[1]
    assert dict(denied.attributes or {}) | {"temporalActivityID": "-"} == {
        "temporalActivityID": "-",
        "temporalWorkflowID": handle.id,
        "temporalRunID": handle.result_run_id,
        "duraguard.action": "deny",
        "duraguard.guardrail": "rules",
        "duraguard.outcome": "complete",
        "duraguard.purpose": "tool-args",
        "duraguard.subjects": 1,
    }
    [event] = denied.events
    assert (event.name, dict(event.attributes or {})) == (
        "duraguard.verdict",
        {
            "duraguard.action": "deny",
            "duraguard.outcome": "complete",
            "duraguard.guardrail": "rules",
            "duraguard.placement": "tool-args",
            "duraguard.tool": "lookup",
            "duraguard.call_id": "c2",
        },
    )
    # The tool's result is judged inside the tool's own step: its span carries that verdict.
    tools = [s for s in spans if s.name == "RunActivity:lookup"]
    assert [s.attributes["duraguard.purpose"] for s in tools] == ["tool-result", "tool-result"]  # type: ignore[index]


async def test_a_call_that_may_be_masked_gets_a_pass_span_before_its_tool_step(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The default mode, with a guardrail that may mask the arguments: each call is judged in a
    pass of its own (its span, the arguments' verdict) before its tool's step is written."""
    spans, _, _, _ = await _traced(temporal_env, None)
    checks = [s for s in spans if s.name == "RunActivity:duraguard.check"]
    actions = [s.attributes["duraguard.action"] for s in checks]  # type: ignore[index]
    assert actions == ["allow", "deny", "mask"]
    tools = [s for s in spans if s.name == "RunActivity:lookup"]
    assert [s.attributes["duraguard.purpose"] for s in tools] == ["tool-result"] * 2  # type: ignore[index]


async def test_a_call_judged_in_its_tool_step_puts_both_verdicts_on_that_steps_span(
    temporal_env: WorkflowEnvironment,
) -> None:
    # the default, with guardrails that never mask: judged inline
    spans, _, _, _ = await _traced(temporal_env, None, NeverMasks())
    assert not [s for s in spans if s.name == "RunActivity:duraguard.check"]
    tools = [s for s in spans if s.name == "RunActivity:lookup"]
    assert len(tools) == 3  # the denied calls' steps judged them and did not run the tool

    def said(span: ReadableSpan) -> tuple[Any, ...]:
        a = dict(span.attributes or {})
        events = [dict(e.attributes or {}) for e in span.events]
        return (
            a["duraguard.action"],
            a.get("duraguard.guardrail"),
            a["duraguard.purpose"],
            [(e["duraguard.placement"], e["duraguard.action"]) for e in events],
        )

    assert [said(s) for s in tools] == [
        (
            "allow",
            None,
            "tool-args,tool-result",
            [("tool-args", "allow"), ("tool-result", "allow")],
        ),
        ("deny", "rules", "tool-args", [("tool-args", "deny")]),
        # the card it would have masked, refused: it said it never masks
        ("deny", "rules", "tool-args", [("tool-args", "deny")]),
    ]


def test_a_pass_over_several_subjects_names_its_most_severe_verdict_and_worst_outcome() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    Verdict = duraguard.Verdict
    results = [
        PassResult(verdict=Verdict.allow(), tool="a", call_id="c1", placement="tool-args"),
        PassResult(verdict=Verdict(action="mask", by="pii", check="pii.email"), tool="b"),
        PassResult(verdict=Verdict.deny("secret reason", by="policy", outcome="partial")),
    ]
    with provider.get_tracer("t").start_as_current_span("step"):
        record_pass("tool-args", results)
    record_pass("tool-args", results)  # outside any span: nothing to record, nothing raised
    [span] = exporter.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert (attrs["duraguard.action"], attrs["duraguard.guardrail"]) == ("deny", "policy")
    assert (attrs["duraguard.outcome"], attrs["duraguard.subjects"]) == ("partial", 3)
    assert [dict(e.attributes or {}).get("duraguard.check") for e in span.events] == [
        None,
        "pii.email",
        None,
    ]
    assert "secret reason" not in _everything_said([span])
