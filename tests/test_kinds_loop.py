"""The four kinds of guardrail inside the loop on a real server: content both ways, the
principal, admission at offer time and at dispatch, validation corrections and their bound."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest

import duraguard
from duraguard.checks import AdmissionRegistry, agents, pii, principals, size_cap, validator
from duraguard.models import answer, calls
from duraguard.principal import principal
from duraguard.testing import AgentInput, AgentWorkflow, CallInput, GuardedCallWorkflow

from ._harness import TOOL_LOG, TOOLS, Harness, make_harness


@duraguard.tool(kind="write", agents=["billing"])
def billing_refund(order_id: str, amount: float) -> dict[str, Any]:
    """A refund only the billing agent may make."""
    TOOL_LOG.append(("billing_refund", {"order_id": order_id, "amount": amount}))
    return {"ok": True}


@duraguard.tool(kind="read")
def admin_export(table: str) -> dict[str, Any]:
    """A tool from another team, gated by the admission registry."""
    TOOL_LOG.append(("admin_export", {"table": table}))
    return {"rows": 3}


@validator(name="answer-names-order")
def answer_names_order(answer_: Any, ctx: Any) -> str | None:
    looked = [r.result.get("order_id") for r in ctx.results("lookup")]
    if not looked:
        return "look the order up before answering"
    if str(looked[-1]) not in str(answer_):
        return f"the answer must name the order you looked up ({looked[-1]})"
    return None


@duraguard.guardrail(name="known-hosts", placements=["egress"])
def known_hosts(subject: duraguard.Subject) -> duraguard.Verdict | None:
    """Egress: the worker may only reach example.org."""
    bad = [t for t in subject.value if "example.org" not in t]
    return duraguard.Verdict.deny(f"may not reach {bad[0]}") if bad else None


REGISTRY = AdmissionRegistry()
REGISTRY.register(agents(allow=["ops"], name="ops-only"), tools="admin_*")


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(
        temporal_env,
        tools=[*TOOLS, billing_refund, admin_export],
        guardrails=[answer_names_order, known_hosts],
        admission=REGISTRY,
    )


async def test_a_tool_this_agent_may_not_reach_is_never_offered_and_the_model_is_told_why(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    model = h.script(
        calls(("billing_refund", {"order_id": "A1", "amount": 5})), answer("could not")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            name="support",
            prompt="refund",
            model=model,
            tools=["lookup", "billing_refund", "admin_export"],
        ),
    )
    assert TOOL_LOG == []
    system = [m.content for m in run.result.messages if m.role == "system"]
    assert system and "billing_refund" in system[0] and "admin_export" in system[0]
    assert "support" in system[0]  # names the caller
    model_inputs = run.scheduled_inputs("duraguard.model")
    assert model_inputs[0]["tools"] == ["lookup"]


async def test_the_allowed_agent_reaches_the_tool(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("billing_refund", {"order_id": "A1", "amount": 5})), answer("done"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(name="billing", prompt="refund", model=model, tools=["billing_refund"]),
    )
    assert run.result.stop_reason == "done"
    assert TOOL_LOG == [("billing_refund", {"order_id": "A1", "amount": 5})]


async def test_admission_holds_at_dispatch_for_a_direct_call(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        CallInput(
            calls=[
                ("billing_refund", {"order_id": "A1", "amount": 5}),
                ("admin_export", {"table": "users"}),
            ]
        ),
    )
    assert TOOL_LOG == []
    assert [(o["ran"], o["action"]) for o in run.result] == [(False, "deny"), (False, "deny")]
    assert "billing" in json.dumps(run.result[0]["result"])


async def test_principal_allow_list_reads_the_principal_named_at_start(h: Harness) -> None:
    guard = [principals(allow=["ana"], tools=["refund"])]
    for who, ran in (("ana", True), ("bob", False), (None, False)):
        TOOL_LOG.clear()
        model = h.script(calls(("refund", {"order_id": "A1", "amount": 5})), answer("ok"))
        tq = f"tq-{uuid.uuid4().hex[:8]}"
        async with h.worker(tq):
            with principal(who) if who else _nothing():
                handle = await h.start(
                    AgentWorkflow.run,
                    AgentInput(prompt="refund", model=model, tools=["refund"], guardrails=guard),
                    task_queue=tq,
                )
            result = await handle.result()
        await h.replay(await handle.fetch_history())
        assert bool(TOOL_LOG) is ran, who
        if not ran:
            refusal = next(m.content for m in result.messages if m.role == "tool")
            assert "ana" in refusal and "refund" in refusal
            assert (
                (who or "no principal") in refusal
                or "missing" in refusal
                or "no principal" in refusal
            )


async def test_size_cap_refuses_a_large_input_naming_length_cap_and_tool(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(
        calls(("send_email", {"to": "a@example.com", "body": "x" * 500})), answer("ok")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="mail", model=model, tools=["send_email"], guardrails=[size_cap(max_chars=100)]
        ),
    )
    assert TOOL_LOG == []
    refusal = next(m.content for m in run.result.messages if m.role == "tool")
    assert "send_email" in refusal and "100" in refusal


async def test_pii_on_results_refuses_on_the_way_out_but_the_tool_step_shows_it_ran(
    h: Harness, caplog
) -> None:
    TOOL_LOG.clear()
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    with caplog.at_level(logging.ERROR, logger="duraguard"):
        run = await h.run(
            AgentWorkflow.run,
            AgentInput(
                prompt="look",
                model=model,
                tools=["lookup"],
                guardrails=[pii(placements=["tool-result"], action="deny", log_level="error")],
            ),
        )
    assert TOOL_LOG == [("lookup", {"order_id": "A1"})]
    assert "lookup" in run.activity_names()
    refusal = next(m.content for m in run.result.messages if m.role == "tool")
    assert "email" in refusal and "ana@example.com" not in refusal
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "email" in logged and "ana@example.com" not in logged


async def test_validation_sends_a_refused_answer_back_as_a_correction(h: Harness) -> None:
    model = h.script(
        calls(("lookup", {"order_id": "A1"})), answer("all good"), answer("order A1 is fine")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="check A1", model=model, tools=["lookup"], guardrails=[answer_names_order.spec()]
        ),
    )
    assert run.result.stop_reason == "done"
    assert run.result.answer == "order A1 is fine"
    corrections = [m.content for m in run.result.messages if m.role == "user"][1:]
    assert corrections and "must name the order you looked up (A1)" in corrections[0]


async def test_validation_is_bounded_and_the_caller_never_sees_a_refused_answer(h: Harness) -> None:
    model = h.script(
        calls(("lookup", {"order_id": "A1"})), answer("no"), answer("nope"), answer("still no")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="check A1",
            model=model,
            tools=["lookup"],
            guardrails=[answer_names_order.spec()],
            max_iterations=10,
        ),
    )
    assert run.result.stop_reason == "no-answer"
    assert run.result.answer is None
    assert "answer-names-order" in (run.result.note or "")
    assert (
        run.activity_names().count("duraguard.model") == 4
    )  # the tool turn + 1 answer + 2 corrections


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


async def test_egress_guardrails_judge_every_outbound_url_of_a_call_in_the_same_step(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    model = h.script(
        calls(
            ("fetch", {"url": "https://evil.example/x"}),
            ("fetch", {"url": "https://example.org/a"}),
        ),
        answer("ok"),
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="read", model=model, tools=["fetch"], guardrails=[known_hosts.spec()]),
    )
    assert TOOL_LOG == [("fetch", {"url": "https://example.org/a"})]
    denied = [v for v in run.result.verdicts if v.action == "deny"]
    assert [(v.tool, v.by) for v in denied] == [("fetch", "known-hosts")]
    # both calls' arguments and outbound URLs were judged in one recorded step (the first
    # check is admission at offer time: this worker gates tools by agent)
    assert run.activity_names() == [
        "duraguard.check",
        "duraguard.model",
        "duraguard.check",
        "fetch",
        "duraguard.model",
    ]


async def test_the_audit_reads_results_judged_inside_the_tool_step_and_every_observation(
    h: Harness,
) -> None:
    """A masked result and a detection only observed both leave the history audit a row, as
    they leave the run's own verdicts one."""
    from duraguard.audit import audit_rows

    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("done"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="look up A1",
            model=model,
            tools=["lookup"],
            guardrails=[
                pii(
                    name="pii-watch",
                    rules=["email"],
                    action="observe",
                    placements=["tool-args", "tool-result"],
                ),
                pii(rules=["email"], placements=["tool-result"]),
            ],
        ),
    )
    rows = await audit_rows(run.history, h.client.data_converter)
    seen = {(r.placement, r.action, r.by) for r in rows}
    assert ("tool-result", "mask", "pii") in seen
    assert ("tool-result", "observe", "pii-watch") in seen
    own = {(r.placement, r.action, r.by) for r in run.result.verdicts}
    assert {("tool-result", "mask", "pii"), ("tool-result", "observe", "pii-watch")} <= own
