"""Issue 24, class 7: what a mask hides never reaches history, in every check mode.

Before, under the default (a lone call judged inside its tool's step), the arguments pii was
about to mask were the tool step's own input, so history held the card number in the clear
(and so did the model step that proposed them, and the model step that gave an answer pii
masked). Now a value a guardrail may mask (pii, whose default action is ``mask``; a custom
guardrail unless it says ``replaces=False``) is judged before any step records it:

* calls ``agent_loop``'s model proposes are judged by the model step itself with the
  guardrails up to the last that may mask, and recorded as they left them; the rest of the list
  judges them in the tool's step, as before (no step more on the allow path);
* an answer is recorded by its model step as judged (masked);
* a call made from workflow code gets a pass of its own whose input is not recorded (a local
  step, in every mode) before the tool's step is written.

Each run replays with no check run again.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import duraguard
from duraguard import Subject, Verdict, pii, schema
from duraguard.audit import audit_rows
from duraguard.models import calls
from duraguard.testing import AgentInput, AgentWorkflow, CallInput, GuardedCallWorkflow

from ._harness import TOOL_LOG, TOOLS, Harness, Run, make_harness
from .test_attacks import _report

pytestmark = pytest.mark.timeout(120)

CARD = "4111 1111 1111 1111"
MAIL = "ana.secret@example.com"


class Redacts(duraguard.Guardrail):
    """Rewrites a call's ``body`` to drop what follows ``secret:`` (a user's rewrite)."""

    name = "redacts"
    placements = frozenset({"tool-args"})
    reads_session = False

    async def check(self, subject: Subject) -> Verdict:
        body = str(subject.value.get("body", ""))
        if "secret:" not in body:
            return Verdict.allow()
        kept = {**subject.value, "body": body.split("secret:")[0] + "[redacted]"}
        return Verdict(action="rewrite", payload=kept, reason="a secret was redacted")


class Looks(duraguard.Guardrail):
    """Reads the session and allows (a rule after pii in the list; it never masks, so it judges
    the call inside its tool's step)."""

    name = "looks"
    placements = frozenset({"tool-args"})
    replaces = False

    async def check(self, subject: Subject) -> Verdict:
        return Verdict.allow()


@duraguard.tool(kind="write")
def log_notes(entries: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """Log notes (each entry a mapping, nested as the caller likes)."""
    TOOL_LOG.append(("log_notes", {"entries": entries, "title": title}))
    return {"logged": len(entries)}


class SaysItNeverMasks(duraguard.Guardrail):
    """Declares it never replaces a value, then masks one (a bug, or a lie)."""

    name = "says-it-never-masks"
    placements = frozenset({"tool-args"})
    reads_session = False
    replaces = False

    async def check(self, subject: Subject) -> Verdict:
        return Verdict(action="mask", payload={"to": "x", "body": "x"})


@pytest.fixture(scope="module")
async def h(temporal_env: Any) -> Harness:
    return await make_harness(
        temporal_env,
        tools=[*TOOLS, log_notes],
        guardrails=[Redacts(), SaysItNeverMasks(), Looks()],
        workflows=[AgentWorkflow, GuardedCallWorkflow],
    )


def _raw(run: Run) -> bytes:
    return b"".join(e.SerializeToString() for e in run.history.events)


AGENT_CASES = {
    "a card": ("send_email", {"to": "ops@example.com", "body": f"card {CARD}"}, [pii()], CARD),
    # (in what a call says, not where it goes: a mask never changes a recipient, it refuses)
    "a mail address, nested": (
        "log_notes", {"entries": [{"text": {"about": f"reach her at {MAIL}"}}], "title": "see"},
        [pii()], MAIL,
    ),
    "a user's rewrite": (
        "send_email",
        {"to": "ops@example.com", "body": "hi secret: the vault code 7731"},
        [Redacts().spec()],
        "vault code 7731",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(AGENT_CASES))
async def test_arguments_an_agent_proposes_are_masked_before_any_step_records_them(
    h: Harness, case: str
) -> None:
    tool, args, guard, secret = AGENT_CASES[case]
    TOOL_LOG.clear()
    model = h.script(calls((tool, args)), _report)
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="tell them", model=model, tools=[tool],
            guardrails=[schema(), *guard, Looks().spec()],
        ),
    )  # fmt: skip
    assert run.result.stop_reason == "done"
    ((_, sent),) = TOOL_LOG
    assert secret not in json.dumps(sent)  # the tool got it masked
    assert secret.encode() not in _raw(run)  # and no step of the run holds it
    # the allow path's steps, as before: the model, the tool (the rule after judged inside it)
    assert run.activity_names() == ["duraguard.model", tool, "duraguard.model"]
    action = "rewrite" if "rewrite" in case else "mask"
    rows = [(r.placement, r.action) for r in run.result.verdicts]
    assert rows[0] == ("tool-args", action), rows
    audited = await audit_rows(run.handle, h.client.data_converter)  # read from history alone
    assert ("tool-args", action) in [(r.placement, r.action) for r in audited]


async def test_calls_of_one_turn_are_each_masked_in_the_step_that_proposed_them(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    turn = calls(
        ("send_email", {"to": "ops@example.com", "body": f"card {CARD}"}),
        ("send_email", {"to": "ops@example.com", "body": f"hello {MAIL}"}),
        ("lookup", {"order_id": "A1"}),
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="do it", model=h.script(turn, _report), tools=["send_email", "lookup"],
            guardrails=[pii(), Looks().spec()],
        ),
    )  # fmt: skip
    assert run.result.stop_reason == "done" and len(TOOL_LOG) == 3
    raw = _raw(run)
    assert CARD.encode() not in raw and MAIL.encode() not in raw


async def test_a_final_answer_is_recorded_masked_by_the_step_that_gave_it(h: Harness) -> None:
    model = h.script(duraguard.models.answer(f"your card is {CARD}"))
    run = await h.run(
        AgentWorkflow.run, AgentInput(prompt="what is my card?", model=model, guardrails=[pii()])
    )
    assert run.result.stop_reason == "done" and CARD not in str(run.result.answer)
    assert CARD.encode() not in _raw(run)
    (out,) = run.activity_outputs("duraguard.model")
    assert out["content"] == "your card is [CARD]"


@pytest.mark.parametrize("mode", [None, "inline", "local", "activity"])
async def test_a_call_from_workflow_code_never_reaches_its_tool_step_unmasked(
    h: Harness, mode: str | None
) -> None:
    """The arguments come from the workflow's own input (in history as given); what duraguard
    writes, the tool's step and any check step whose input history holds, holds them masked."""
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        CallInput(
            calls=[("send_email", {"to": "ops@example.com", "body": f"card {CARD}"})],
            guardrails=[schema(), pii(), Looks().spec()],
            check_mode=mode,
        ),
    )
    assert [(o["ran"], o["action"]) for o in run.result] == [(True, "mask")]
    ((_, sent),) = TOOL_LOG
    assert CARD not in json.dumps(sent)
    recorded = json.dumps(
        [*run.scheduled_inputs("send_email"), *run.scheduled_inputs("duraguard.check")]
    )
    assert CARD not in recorded and "[CARD]" in recorded
    assert "duraguard.check" in run.activity_names()  # a pass of its own, a local step


async def test_a_guardrail_that_says_it_never_masks_and_masks_is_refused(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        CallInput(
            calls=[("send_email", {"to": "ops@example.com", "body": "hello"})],
            guardrails=[SaysItNeverMasks().spec()],
        ),
    )
    assert [(o["ran"], o["action"]) for o in run.result] == [(False, "deny")]
    assert TOOL_LOG == []
    assert run.activity_names() == ["send_email"]  # judged in the tool's step, as it said
