"""The agent loop on a real Temporal server: every action and stop reason, then replay."""

from __future__ import annotations

import pytest

from duraguard import moderation, pii, schema
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, Harness, make_harness


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env)


async def test_allowed_call_runs_and_loop_ends_done(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="What is order A1?",
            model=model,
            tools=["lookup"],
            guardrails=[schema(), h.counting.spec()],
        ),
    )
    r = run.result
    assert r.stop_reason == "done"
    assert r.answer == "Order A1 is 20.00"
    names = run.activity_names()
    assert names == [
        "duraguard.check",  # pre-prompt (counting declares every placement)
        "duraguard.model",
        "lookup",  # a lone call: its arguments and its result judged inside its own step
        "duraguard.model",
        "duraguard.check",  # the answer: as the model's text and as the final answer, one step
    ]
    # check mode local: a pass of its own for the arguments, and for each of the answer's checks
    local = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="What is order A1?",
            model=h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00")),
            tools=["lookup"],
            guardrails=[schema(), h.counting.spec()],
            check_mode="local",
        ),
    )
    assert local.result.answer == "Order A1 is 20.00"
    assert local.activity_names() == [
        "duraguard.check",
        "duraguard.model",
        "duraguard.check",  # tool-args: schema + counting, one step
        "lookup",  # its result judged inside the tool's own step
        "duraguard.model",
        "duraguard.check",  # post-model
        "duraguard.check",  # final-answer
    ]


async def test_schema_denial_goes_back_to_model_which_corrects_itself(h: Harness) -> None:
    model = h.script(
        calls(("issue_credit", {"reason": "duplicate"})),
        calls(("issue_credit", {"amount": 5})),
        answer("credited"),
    )
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="credit me", model=model, tools=["issue_credit"], guardrails=[schema()]),
    )
    r = run.result
    assert r.stop_reason == "done"
    refusal = next(m for m in r.messages if m.role == "tool")
    assert '"valid":false' in refusal.content
    assert '"tool":"issue_credit"' in refusal.content
    assert "#: Additional properties are not allowed ('reason' was unexpected)" in refusal.content
    assert "#: 'amount' is a required property" in refusal.content
    assert "by" not in __import__("json").loads(refusal.content)  # a refusal carries no decider
    assert TOOL_LOG == [("issue_credit", {"amount": 5})]
    # each call's arguments were judged in its own tool step; the refused one's tool never ran
    assert run.activity_names().count("issue_credit") == 2
    assert [o["ran"] for o in run.activity_outputs("issue_credit")] == [False, True]
    denied = [v for v in r.verdicts if v.action == "deny"]
    assert [(v.tool, v.by, v.placement) for v in denied] == [
        ("issue_credit", "schema", "tool-args")
    ]


async def test_mask_replaces_card_before_the_tool_step(h: Harness) -> None:
    card = "4111 1111 1111 1111"
    model = h.script(
        calls(("send_email", {"to": "ops@example.com", "body": f"customer card {card}"})),
        answer("sent"),
    )
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="email ops",
            model=model,
            tools=["send_email"],
            guardrails=[pii(rules=["credit-card"])],
            check_mode="activity",
        ),
    )
    assert run.result.stop_reason == "done"
    assert TOOL_LOG == [("send_email", {"to": "ops@example.com", "body": "customer card [CARD]"})]
    tool_inputs = run.scheduled_inputs("send_email")
    assert tool_inputs[0]["args"]["body"] == "customer card [CARD]"
    assert card not in str(tool_inputs)
    masked = [v for v in run.result.verdicts if v.action == "mask"]
    assert masked and masked[0].by == "pii"


async def test_halt_ends_loop_naming_guardrail_and_siblings_still_run(h: Harness) -> None:
    model = h.script(
        calls(
            ("lookup", {"order_id": "A1"}),
            ("send_email", {"to": "x@example.com", "body": "attack them"}),
        ),
        answer("never reached"),
    )
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go",
            model=model,
            tools=["lookup", "send_email"],
            guardrails=[moderation(classifier="toy", placements=["tool-args"])],
        ),
    )
    r = run.result
    assert r.stop_reason == "guardrail"
    assert r.halted_by == "moderation"
    assert TOOL_LOG == [("lookup", {"order_id": "A1"})]  # the sibling completed
    assert "send_email" not in run.activity_names()
    # moderation calls out, so its pass is a regular activity
    assert "duraguard.check" in [n for n, _ in run.activity_ids()]


async def test_halt_outranks_bail_in_the_same_turn(h: Harness) -> None:
    model = h.script(
        calls(
            ("finish", {"summary": "all done"}),
            ("send_email", {"to": "x@example.com", "body": "attack"}),
        ),
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go",
            model=model,
            tools=["finish", "send_email"],
            guardrails=[moderation(classifier="toy", placements=["tool-args"])],
        ),
    )
    assert run.result.stop_reason == "guardrail"
    assert run.result.halted_by == "moderation"


async def test_bail_ends_loop_with_its_answer(h: Harness) -> None:
    model = h.script(calls(("finish", {"summary": "closed the ticket"})))
    run = await h.run(AgentWorkflow.run, AgentInput(prompt="go", model=model, tools=["finish"]))
    assert run.result.stop_reason == "bail"
    assert run.result.answer == "closed the ticket"


async def test_max_iterations(h: Harness) -> None:
    model = h.script(*[calls(("lookup", {"order_id": f"A{i}"})) for i in range(5)])
    run = await h.run(
        AgentWorkflow.run, AgentInput(prompt="go", model=model, tools=["lookup"], max_iterations=3)
    )
    assert run.result.stop_reason == "max-iterations"
    assert run.result.iterations == 3
    assert run.activity_names().count("lookup") == 3


async def test_loop_without_guardrails_writes_no_guardrail_steps(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    run = await h.run(AgentWorkflow.run, AgentInput(prompt="go", model=model, tools=["lookup"]))
    assert "duraguard.check" not in run.activity_names()
    assert run.activity_names() == ["duraguard.model", "lookup", "duraguard.model"]


async def test_guardrail_that_raises_refuses_with_outcome_partial(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="go", model=model, tools=["lookup"], guardrails=[_custom("raising")]),
    )
    denied = [v for v in run.result.verdicts if v.action == "deny"]
    assert [(v.by, v.outcome) for v in denied] == [("raising", "partial")]
    assert TOOL_LOG == []


async def test_guardrail_past_its_timeout_refuses_with_outcome_partial(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go", model=model, tools=["lookup"], guardrails=[_custom("slow", timeout=0.2)]
        ),
    )
    denied = [v for v in run.result.verdicts if v.action == "deny"]
    assert [(v.by, v.outcome) for v in denied] == [("slow", "partial")]
    assert "timed out" in (denied[0].reason or "")
    assert TOOL_LOG == []


async def test_on_error_fail_fails_the_run_with_the_error(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go",
            model=model,
            tools=["lookup"],
            guardrails=[_custom("fail-loudly", on_error="fail")],
        ),
        expect_failure=True,
    )
    assert "policy store unreachable" in str(run.result.cause.cause)
    assert TOOL_LOG == []


async def test_unknown_tool_and_non_object_arguments_are_refused_to_the_model(h: Harness) -> None:
    model = h.script(
        calls(("delete_everything", {}), ("lookup", "A1"), ("lookup", {"order_id": "A1"})),
        answer("ok"),
    )
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="go", model=model, tools=["lookup"], guardrails=[schema()]),
    )
    tool_msgs = [m.content for m in run.result.messages if m.role == "tool"]
    assert "there is no tool named 'delete_everything'" in tool_msgs[0]
    assert "must be a JSON object" in tool_msgs[1]
    assert '"order_id":"A1"' in tool_msgs[2]
    assert TOOL_LOG == [("lookup", {"order_id": "A1"})]


async def test_failing_tool_reaches_model_as_error_result(h: Harness) -> None:
    model = h.script(calls(("broken", {})), answer("sorry"))
    run = await h.run(AgentWorkflow.run, AgentInput(prompt="go", model=model, tools=["broken"]))
    assert run.result.stop_reason == "done"
    assert "the backend is down" in next(m.content for m in run.result.messages if m.role == "tool")


async def test_observe_records_and_lets_the_call_run(h: Harness) -> None:
    model = h.script(calls(("send_email", {"to": "ana@example.com", "body": "hi"})), answer("ok"))
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go", model=model, tools=["send_email"], guardrails=[pii(action="observe")]
        ),
    )
    assert TOOL_LOG == [("send_email", {"to": "ana@example.com", "body": "hi"})]
    assert [v.action for v in run.result.verdicts] == ["observe"]


async def test_pre_prompt_refusal_never_reaches_the_model(h: Harness) -> None:
    model = h.script(answer("should not be asked"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="how to attack", model=model, guardrails=[moderation(classifier="toy")]),
    )
    assert run.result.stop_reason == "guardrail"
    assert run.result.halted_by == "moderation"
    assert "duraguard.model" not in run.activity_names()


async def test_missing_classifier_faults_instead_of_passing(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("ok"))
    TOOL_LOG.clear()
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="hello",
            model=model,
            tools=["lookup"],
            guardrails=[moderation(classifier="nope", placements=["tool-args"])],
        ),
    )
    assert TOOL_LOG == []
    denied = [v for v in run.result.verdicts if v.action == "deny"]
    assert denied[0].outcome == "partial"


def _custom(name: str, **kw):
    from duraguard.guardrail import GuardrailSpec

    return GuardrailSpec(kind="custom", name=name, placements=("tool-args",), **kw)
