"""Check mode ``inline``: a lone call's arguments judged inside its own tool step, on a real
server, each run replayed with no check run again (duraguard._inline)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client
from temporalio.worker import Worker

import duraguard
from duraguard import moderation, pii, schema
from duraguard._patches import KEPT_RESULTS_PASSES, PASSES, REST_IN_STEPS_PASSES, RESULT_KEYS_PASSES
from duraguard._tool_step import SeenEntries, SeenSpecs
from duraguard._types import LedgerEntry, SessionView
from duraguard._wire import (
    DECIDE,
    CheckRequest,
    ToolInvocation,
    shown_digest,
    specs_ref_for,
    turns_digest,
)
from duraguard.approvals import ApprovalCheck, decision_for
from duraguard.audit import audit_rows
from duraguard.checks import address, policy
from duraguard.guardrail import GuardrailSpec
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, CallInput, GuardedCallWorkflow

from ._harness import (
    TOOL_LOG,
    TOOLS,
    Counting,
    Harness,
    ScriptedModels,
    make_harness,
    parked,
    patch_markers,
    steps,
)

RULES = """
rules:
  - name: small refunds are fine
    tool: refund
    when:
      - arg: amount
        lte: 100
    then: allow
  - name: refunds over 100 need a person
    tool: refund
    when:
      - arg: amount
        gt: 100
    then: ask
"""
RULE_CHECK = policy(checks=["tool_kinds", "your_rules"])


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, rules=RULES, accept_unsigned=True)


def _calls(*made: tuple[str, dict[str, Any]], guardrails: list[Any]) -> CallInput:
    return CallInput(calls=list(made), guardrails=guardrails, check_mode="inline")


async def test_an_allowed_call_is_judged_inside_its_tool_step_and_has_no_step_of_its_own(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    before = h.plugin.checks_run
    run = await h.run(
        GuardedCallWorkflow.run,
        # (pii that observes: one that may mask judges the arguments before any step records
        # them, in a pass of its own; see test_a_masked_argument_reaches_the_tool_masked)
        _calls(
            ("lookup", {"order_id": "A1"}),
            guardrails=[schema(), pii(action="observe"), RULE_CHECK],
        ),
    )
    assert [(o["ran"], o["action"]) for o in run.result] == [(True, "allow")]
    assert TOOL_LOG == [("lookup", {"order_id": "A1"})]
    # one step for the call: its checks and the tool's result judged inside it
    assert run.activity_names() == ["lookup"]
    ((_, step_id),) = run.activity_ids()
    assert step_id.startswith(f"{run.result[0]['call_id']}.")  # bound to what it judged
    assert h.plugin.checks_run == before + 2  # the arguments, then the result
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [(r.placement, r.tool, r.action, r.by) for r in rows] == [
        ("tool-args", "lookup", "allow", None),
        ("tool-result", "lookup", "observe", "pii"),  # the email in what it returned
    ]


async def test_a_masked_argument_reaches_the_tool_masked(h: Harness) -> None:
    TOOL_LOG.clear()
    card = "4111 1111 1111 1111"
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(
            ("send_email", {"to": "ops@example.com", "body": f"card {card}"}),
            guardrails=[pii(rules=["credit-card"])],
        ),
    )
    assert [(o["ran"], o["action"], o["by"]) for o in run.result] == [(True, "mask", "pii")]
    assert TOOL_LOG == [("send_email", {"to": "ops@example.com", "body": "card [CARD]"})]
    # pii may mask: it judges the arguments in a pass of its own (a local step, whose input is
    # not recorded) before the tool's step is written, and the step holds them masked
    assert run.activity_names() == ["duraguard.check", "send_email"]
    assert card not in json.dumps(run.scheduled_inputs("send_email"))
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [(r.placement, r.action, r.by) for r in rows] == [("tool-args", "mask", "pii")]


async def test_a_denied_call_does_not_run_and_is_recorded(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(
            ("issue_credit", {"amount": 5, "reason": "goodwill"}),
            ("issue_credit", {"amount": 5}),
            guardrails=[schema()],
        ),
    )
    assert [(o["ran"], o["action"], o["by"]) for o in run.result] == [
        (False, "deny", "schema"),
        (True, "allow", None),
    ]
    assert "Additional properties are not allowed" in run.result[0]["result"]["error"]
    assert TOOL_LOG == [("issue_credit", {"amount": 5})]
    assert run.activity_names() == ["issue_credit", "issue_credit"]
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [(r.action, r.by) for r in rows] == [("deny", "schema"), ("allow", None)]


async def test_an_ask_parks_the_call_and_the_yes_runs_it_once(h: Harness) -> None:
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:10]}"
    spec = _calls(("refund", {"order_id": "A7", "amount": 150}), guardrails=[RULE_CHECK])
    async with h.worker(tq):
        handle = await h.start(GuardedCallWorkflow.run, spec, task_queue=tq)
        pending = await parked(handle)
        assert pending and pending[0].asked_by == "policy"
        assert TOOL_LOG == []  # the step that asked did not run the tool
        yes = decision_for(pending[0], approver="alice")  # unsigned: accepted in this harness
        assert (await handle.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        result = await handle.result()
    await h.replay(await handle.fetch_history())
    assert [(o["ran"], o["tool"]) for o in result] == [(True, "refund")]
    assert TOOL_LOG == [("refund", {"order_id": "A7", "amount": 150})]
    rows = await audit_rows(handle, h.client.data_converter)
    assert [(r.action, r.by) for r in rows] == [
        ("approve", "policy"),  # asked inside the tool's step, which did not run the tool
        ("allow", "person"),  # the yes, verified
        ("allow", None),  # the pass with the person's grant, before the tool's own step
    ]


async def test_a_halt_ends_the_agent_loop_naming_the_guardrail(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(
        calls(("send_email", {"to": "x@example.com", "body": "card 4111 1111 1111 1111"})),
        answer("never reached"),
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go",
            model=model,
            tools=["send_email"],
            guardrails=[pii(rules=["credit-card"], action="halt", placements=["tool-args"])],
            check_mode="inline",
        ),
    )
    assert (run.result.stop_reason, run.result.halted_by) == ("guardrail", "pii")
    assert TOOL_LOG == []
    assert run.activity_names() == ["duraguard.model", "send_email"]


async def test_a_failing_tool_is_recorded_as_failed_with_its_verdict_from_a_pass(
    h: Harness,
) -> None:
    run = await h.run(GuardedCallWorkflow.run, _calls(("broken", {}), guardrails=[schema()]))
    ((o,),) = [run.result]
    assert o["ran"] is True and "failed" in o["result"]["error"]
    # the failed step took its verdict with it; a pass of its own says what allowed the call
    assert run.activity_names() == ["broken", "duraguard.check"]
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [(r.placement, r.action) for r in rows] == [("tool-args", "allow")]


async def test_a_guardrail_that_calls_out_gets_a_pass_of_its_own(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(
            ("lookup", {"order_id": "A1"}),
            guardrails=[schema(), moderation(classifier="toy", placements=["tool-args"])],
        ),
    )
    assert run.result[0]["ran"] is True
    assert run.activity_names() == ["duraguard.check", "lookup"]


async def test_a_turn_of_several_calls_is_judged_in_one_pass(h: Harness) -> None:
    TOOL_LOG.clear()
    model = h.script(
        calls(("lookup", {"order_id": "A1"}), ("lookup", {"order_id": "A2"})), answer("ok")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="go", model=model, tools=["lookup"], guardrails=[schema()], check_mode="inline"
        ),
    )
    assert run.result.stop_reason == "done"
    names = run.activity_names()
    assert names[:4] == ["duraguard.model", "duraguard.check", "lookup", "lookup"]


async def test_an_egress_refusal_decides_inside_the_step(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(
            ("fetch", {"url": "http://169.254.169.254/latest/meta-data/"}),
            ("fetch", {"url": "https://example.com/a"}),
            guardrails=[address(placements=["egress"])],
        ),
    )
    assert [(o["ran"], o["action"], o["by"]) for o in run.result] == [
        (False, "deny", "address"),
        (True, "allow", None),
    ]
    assert [t for t, _ in TOOL_LOG] == ["fetch"]
    assert run.activity_names() == ["fetch", "fetch"]


async def test_a_guardrail_that_fails_loudly_fails_the_run_and_the_tool_never_runs(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    spec = GuardrailSpec(
        kind="custom", name="fail-loudly", placements=("tool-args",), on_error="fail"
    )
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(("lookup", {"order_id": "A1"}), guardrails=[spec]),
        expect_failure=True,
    )
    assert "policy store unreachable" in str(run.result.cause.cause)
    assert TOOL_LOG == []


def _lookups(n: int) -> CallInput:
    return _calls(
        *(("lookup", {"order_id": f"A{i}"}) for i in range(n)),
        guardrails=[schema(), pii(action="observe"), RULE_CHECK],  # judged in the tool's step
    )


def _inputs(run: Any, tool: str) -> list[dict[str, Any]]:
    return [i for i in run.scheduled_inputs(tool) if i.get("check")]


async def test_entries_shown_once_are_sent_by_reference_after(h: Harness) -> None:
    """The policy reads the session: its entries travel in full the first time a check of this
    run is shown them, and as a reference to them after, so the history grows with the call."""
    run = await h.run(GuardedCallWorkflow.run, _lookups(4))
    assert [o["ran"] for o in run.result] == [True] * 4
    assert run.activity_names() == ["lookup"] * 4
    sent = _inputs(run, "lookup")
    full = [len(i["check"]["subjects"][0]["session"].get("entries", ())) for i in sent]
    refs = [i.get("shown_at") for i in sent]
    assert full == [0, 1, 1, 1]  # each step is sent only the entry the step before added
    assert refs == [None, None, [0], [0, 1]]  # the others by index, bound by one digest
    assert [bool(i.get("shown_digest")) for i in sent] == [False, False, True, True]
    assert not any("shown_entries" in i for i in sent)
    # The arguments, the context and the result guardrails travel once per step, not twice.
    for i in sent:
        assert "value" not in i["check"]["subjects"][0]
        assert "context" not in i["check"]["subjects"][0]  # the step's own, not written twice
        assert i["result_guardrails"] == [] and i["results_by_check"] == [1]  # pii, 2nd of 3
    # The guardrails travel in full once per run, then by a reference the worker works out too.
    first = sent[0]["check"]["guardrails"]
    ref = specs_ref_for([GuardrailSpec.model_validate(g) for g in first])
    assert [len(i["check"]["guardrails"]) for i in sent] == [3, 0, 0, 0]
    assert [i.get("guardrails_ref") for i in sent] == [None, ref, ref, ref]


async def test_guardrails_sent_by_reference_still_judge_the_call(h: Harness) -> None:
    TOOL_LOG.clear()
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(
            ("lookup", {"order_id": "A1"}),
            ("lookup", {"order_id": "A2", "note": "unexpected"}),  # the schema refuses it
            ("refund", {"order_id": "A2", "amount": 20}),  # the rules allow it
            guardrails=[schema(), pii(action="observe"), RULE_CHECK],
        ),
    )
    assert [(o["ran"], o["action"]) for o in run.result] == [
        (True, "allow"),
        (False, "deny"),
        (True, "allow"),
    ]
    assert TOOL_LOG == [
        ("lookup", {"order_id": "A1"}),
        ("refund", {"order_id": "A2", "amount": 20}),
    ]
    assert [bool(i.get("guardrails_ref")) for i in _inputs(run, "lookup")] == [False, True]
    assert "duraguard.check" not in run.activity_names()


class _ForgetfulSpecs:
    """A worker that keeps no guardrails (a restart between calls, or another worker)."""

    def remember(self, specs: Any) -> None:
        return None

    def restore(self, ref: str) -> None:
        return None


class _Forgetful:
    """A worker that keeps no entries (a restart between calls, or another worker)."""

    def remember(self, view: Any, **_: Any) -> None:
        return None

    def restore(self, view: Any, hashes: Any) -> None:
        return None

    def restore_at(self, view: Any, indices: Any, digest: str) -> None:
        return None

    def with_turns(self, view: Any, digest: str) -> None:
        return None


@pytest.mark.parametrize(
    ("cache", "forgetful", "by_ref"),
    [
        # call 2 names the guardrails by reference: its step misses, call 3 is sent them anew
        ("specs", _ForgetfulSpecs(), [False, True, False]),
        # call 3 names call 1's entry by index (call 2 was shown it in full): its step misses
        ("entries", _Forgetful(), [False, True, True]),
    ],
    ids=["never-sent-the-guardrails", "never-shown-an-entry"],
)
async def test_a_worker_missing_what_a_step_names_judges_nothing_and_a_pass_judges_the_call(
    h: Harness, monkeypatch: pytest.MonkeyPatch, cache: str, forgetful: Any, by_ref: list[bool]
) -> None:
    TOOL_LOG.clear()
    monkeypatch.setattr(h.plugin.runtime.seen, cache, forgetful)
    run = await h.run(GuardedCallWorkflow.run, _lookups(3))
    assert [o["ran"] for o in run.result] == [True] * 3
    assert TOOL_LOG == [("lookup", {"order_id": f"A{i}"}) for i in range(3)]  # each ran once
    # the step that missed judged nothing and ran nothing, a pass with everything judged the
    # call, and its tool ran in a step of its own
    names = run.activity_names()
    assert (names.count("lookup"), names.count("duraguard.check")) == (4, 1)
    assert [bool(i.get("guardrails_ref")) for i in _inputs(run, "lookup")] == by_ref


async def test_a_final_answer_is_judged_as_text_and_as_the_answer_in_one_step(h: Harness) -> None:
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="What is order A1?",
            model=model,
            tools=["lookup"],
            guardrails=[schema(), h.counting.spec()],
            check_mode="inline",
        ),
    )
    assert (run.result.stop_reason, run.result.answer) == ("done", "Order A1 is 20.00")
    assert run.activity_names() == [
        "duraguard.check",  # pre-prompt
        "duraguard.model",
        "lookup",  # its arguments and its result judged inside it
        "duraguard.model",
        # the answer, as the model's text and as the final answer: a step of its own, as
        # "counting" may read the session (a guardrail's default), which a model step is not sent
        "duraguard.check",
    ]
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [r.placement for r in rows][-2:] == ["post-model", "final-answer"]


async def test_an_answer_whose_text_is_masked_is_judged_again_as_the_final_answer(
    h: Harness,
) -> None:
    model = h.script(answer("Write to ana@example.com"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="who?", model=model, guardrails=[pii()], check_mode="inline"),
    )
    assert run.result.stop_reason == "done"
    assert "ana@example.com" not in str(run.result.answer)
    # the model step judged its answer (as text and as the final answer) and recorded it
    # masked; the final-answer verdict judged the unmasked text, so a pass of its own judged
    # the answer as it reads after the mask. The address is nowhere in history.
    assert run.activity_names() == ["duraguard.model", "duraguard.check"]
    raw = b"".join(e.SerializeToString() for e in run.history.events)
    assert b"ana@example.com" not in raw
    rows = await audit_rows(run.handle, h.client.data_converter)
    assert [(r.placement, r.action) for r in rows][-3:] == [
        ("post-model", "mask"),
        ("final-answer", "mask"),
        ("final-answer", "allow"),
    ]


async def test_arguments_over_the_size_limit_are_refused_before_any_step(h: Harness) -> None:
    """A model that sends 1.2 MB of arguments: refused in workflow code, as without inline
    (a step that cannot be scheduled would wedge the run); nothing runs."""
    TOOL_LOG.clear()
    body = "x" * 1_200_000
    run = await h.run(
        GuardedCallWorkflow.run,
        _calls(("send_email", {"to": "a@example.com", "body": body}), guardrails=[schema()]),
    )
    (o,) = run.result
    assert (o["ran"], o["action"], o["by"]) == (False, "deny", "duraguard")
    assert "over the" in o["result"]["error"]
    assert TOOL_LOG == [] and run.activity_names() == []


@pytest.mark.parametrize(
    ("by_check", "specs", "beside"),
    [((3,), (), ()), ((1,), (pii(),), ()), ((0,), (pii(),), (pii(),)), ((-1,), (pii(),), ())],
)
def test_result_guardrails_named_by_position_must_name_the_checks_own(
    by_check: tuple[int, ...], specs: tuple[Any, ...], beside: tuple[Any, ...]
) -> None:
    """A tool step's input whose result guardrails, named by position in its check, name
    nothing (or sit beside a list of their own) is refused when read, before the tool runs: the
    result is never left unjudged."""
    check = CheckRequest(guardrails=specs, subjects=()) if specs else None
    with pytest.raises(ValidationError, match="results_by_check"):
        ToolInvocation(
            call_id="c1", args={}, check=check, results_by_check=by_check, result_guardrails=beside
        )
    ok = ToolInvocation(
        call_id="c1",
        args={},
        check=CheckRequest(guardrails=(schema(), pii()), subjects=()),
        results_by_check=(1,),
    )
    assert [s.kind for s in ok.result_specs] == ["pii"]


def _entry(i: int, tool: str = "lookup") -> LedgerEntry:
    return LedgerEntry(
        index=i, call_id=f"c{i + 1}", tool=tool, args={"order_id": f"A{i}"}, action="allow",
        entry_hash=f"{i:02d}" * 32,
    )  # fmt: skip


def test_entries_named_by_index_are_put_back_only_when_their_hashes_make_the_digest() -> None:
    seen = SeenEntries()
    shown = SessionView(session_id="wf-1", entries=(_entry(0), _entry(1)))
    seen.remember(shown)
    later = SessionView(session_id="wf-1", entries=(_entry(2),))
    digest = shown_digest([_entry(0).entry_hash, _entry(1).entry_hash])
    back = seen.restore_at(later, (0, 1), digest)
    assert back is not None and [e.index for e in back.entries] == [0, 1, 2]
    # Another run under the same id wrote other entries at those indices: nothing is put back.
    assert seen.restore_at(later, (0, 1), shown_digest(["other", _entry(1).entry_hash])) is None
    assert seen.restore_at(later, (0, 5), digest) is None  # one it never saw
    assert seen.restore_at(SessionView(session_id="wf-2"), (0, 1), digest) is None
    # A step scheduled before indices were sent names its entries by hash: still put back.
    by_hash = seen.restore(later, (_entry(1).entry_hash,))
    assert by_hash is not None and [e.index for e in by_hash.entries] == [1, 2]
    assert seen.restore(later, ("ff" * 32,)) is None


async def test_the_persons_turn_is_sent_to_the_first_step_and_by_digest_after(h: Harness) -> None:
    prompt = "Look up A0, A1 and A2 for me. " + "Context the person pasted. " * 200
    model = h.script(
        *(calls(("lookup", {"order_id": f"A{i}"})) for i in range(3)), answer("all looked up")
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt=prompt, model=model, tools=["lookup"], guardrails=[schema(), RULE_CHECK]),
    )
    assert run.result.stop_reason == "done"
    sent = _inputs(run, "lookup")
    turns = [i["check"]["subjects"][0]["session"].get("turns") for i in sent]
    assert turns == [[prompt], None, None]  # the prompt's 5 KB once, not once a call
    digest = turns_digest([prompt])
    assert [i.get("shown_turns") for i in sent] == [None, digest, digest]
    assert "duraguard.check" not in run.activity_names()[2:-1]  # each call judged in its step


def test_turns_named_by_digest_are_put_back_only_by_a_worker_shown_them() -> None:
    seen = SeenEntries()
    view = SessionView(session_id="wf-1", turns=("refund A2",))
    bare = SessionView(session_id="wf-1")
    digest = turns_digest(["refund A2"])
    assert seen.with_turns(bare, digest) is None
    seen.remember(view, turns_sent=False)  # came by digest: nothing new to keep
    assert seen.with_turns(bare, digest) is None
    seen.remember(view)
    back = seen.with_turns(bare, digest)
    assert back is not None and back.turns == ("refund A2",)
    assert seen.with_turns(SessionView(session_id="wf-2"), digest) is None  # another session


def test_guardrails_named_by_reference_are_put_back_and_checked_before_the_tool_runs() -> None:
    """A step naming its check's guardrails by reference carries none of its own, and gets
    positions checked once they are put back; a worker never sent them judges nothing."""
    with pytest.raises(ValidationError, match="guardrails_ref"):
        ToolInvocation(call_id="c1", args={}, guardrails_ref="ab" * 32)  # no check
    with pytest.raises(ValidationError, match="guardrails_ref"):
        ToolInvocation(
            call_id="c1",
            args={},
            check=CheckRequest(guardrails=(schema(),), subjects=()),
            guardrails_ref="ab" * 32,
        )
    specs = (schema(), pii())
    ref = specs_ref_for(specs)
    bare = ToolInvocation(
        call_id="c1",
        args={},
        check=CheckRequest(guardrails=(), subjects=()),
        results_by_check=(1,),
        guardrails_ref=ref,
    )
    seen = SeenSpecs()
    assert seen.restore(ref) is None  # never sent them: the step judges nothing
    seen.remember(specs)
    restored = seen.restore(ref)
    assert restored is not None
    back = bare.with_guardrails(restored)
    assert (back.guardrails_ref, [s.kind for s in back.result_specs]) == ("", ["pii"])
    with pytest.raises(ValidationError, match="results_by_check"):
        bare.with_guardrails((schema(),))  # position 1 names nothing among one guardrail


def _paired(env: Any, **options: Any) -> Harness:
    """A harness whose plugin is built with ``options``, sharing ``_UPGRADE``'s scripts."""
    plugin = duraguard.DuraguardPlugin(
        tools=list(TOOLS),
        models={"scripted": _UPGRADE.scripts},
        guardrails=[_UPGRADE.counting],
        rules=RULES,
        accept_unsigned=True,
        **options,
    )
    config = env.client.config()
    config["plugins"] = [plugin]
    return Harness(
        client=Client(**config),
        plugin=plugin,
        scripts=_UPGRADE.scripts,
        counting=_UPGRADE.counting,
    )


@dataclass
class _Shared:
    scripts: ScriptedModels = field(default_factory=ScriptedModels)
    counting: Counting = field(default_factory=Counting)


_UPGRADE = _Shared()


def _upgrade_input(h: Harness) -> AgentInput:
    model = h.script(
        calls(("refund", {"order_id": "A2", "amount": 500})),  # a person is asked
        calls(("lookup", {"order_id": "A1"})),
        answer("refunded, and looked up"),
    )
    return AgentInput(
        prompt="refund A2, then look up A1",
        model=model,
        tools=["refund", "lookup"],
        guardrails=[schema(), RULE_CHECK, _UPGRADE.counting.spec()],
    )


@pytest.mark.parametrize("upgraded_mid_run", [True, False], ids=["upgraded", "new"])
async def test_a_run_started_before_inline_was_the_default_keeps_its_passes_after_upgrade(
    temporal_env: Any, upgraded_mid_run: bool
) -> None:
    """``auto`` judges lone calls inline only in runs that started with the patch: a run parked
    on a person by a worker that judged every call in a pass of its own (as ``auto`` did before)
    is taken over by a worker with the new default, replays, and goes on with passes; a run
    started on the new worker judges its calls inline. Both histories replay."""
    before_upgrade = _paired(temporal_env, check_mode="local")
    upgraded = _paired(temporal_env)
    first = before_upgrade if upgraded_mid_run else upgraded
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    TOOL_LOG.clear()
    async with first.worker(tq):
        handle = await first.start(AgentWorkflow.run, _upgrade_input(first), task_queue=tq)
        (ask,) = await parked(handle)
    async with upgraded.worker(tq):
        # This worker has never seen the run: it replays it from the start, then goes on.
        await handle.signal(DECIDE, decision_for(ask, approver="manager"))
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [
        ("refund", {"order_id": "A2", "amount": 500}),
        ("lookup", {"order_id": "A1"}),
    ]
    history = await handle.fetch_history()
    names = [name for name, _ in steps(history)]
    patched = [
        e
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]
    if upgraded_mid_run:
        # No marker that lets calls be judged in their steps (one that keeps their passes):
        # every call keeps its pass, the lookup judged after the upgrade included.
        assert all(
            PASSES in str(e.marker_recorded_event_attributes)
            or RESULT_KEYS_PASSES in str(e.marker_recorded_event_attributes)
            or KEPT_RESULTS_PASSES in str(e.marker_recorded_event_attributes)
            or REST_IN_STEPS_PASSES in str(e.marker_recorded_event_attributes)
            for e in patched
        )
        assert names == [
            "duraguard.check",  # the prompt
            "duraguard.model",
            "duraguard.check",  # the refund's arguments: a person is asked
            "duraguard.ask",
            "duraguard.verify-decision",
            "duraguard.check",  # the yes judged again
            "refund",
            "duraguard.model",  # from here on, the upgraded worker
            "duraguard.check",  # the lookup's arguments, a pass of its own
            "lookup",
            "duraguard.model",
            "duraguard.check",  # the answer as the model's text
            "duraguard.check",  # and as the final answer
        ]
    else:
        assert len(patched) == 1
        assert names == [
            "duraguard.check",
            "duraguard.model",
            "refund",  # judged in its own step, which asked and did not run the tool
            "duraguard.ask",
            "duraguard.verify-decision",
            "duraguard.check",
            "refund",  # the yes: the tool runs
            "duraguard.model",
            "lookup",  # judged inside its own step
            "duraguard.model",
            "duraguard.check",  # the answer, as text and as the final answer in one step
        ]
    await upgraded.replay(history)


async def test_a_worker_can_hold_the_new_default_back_until_every_worker_has_it(
    temporal_env: Any,
) -> None:
    """A rolling upgrade: the SDK's patch_activation_callback, returning False for duraguard's
    patches, keeps new runs judging each call in a pass (no marker), and their histories replay."""
    from duraguard._patches import (
        ANSWER_IN_MODEL_STEP,
        INLINE_BY_DEFAULT,
        KEPT_RESULTS,
        MASK_BEFORE_HISTORY,
        REST_IN_STEPS,
        RESULT_KEYS,
    )

    asked: list[str] = []

    def hold(info: Any) -> bool:
        asked.append(info.patch_id)
        return not info.patch_id.startswith("duraguard.")

    h = _paired(temporal_env)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    TOOL_LOG.clear()
    async with Worker(
        h.client, task_queue=tq, workflows=list(h.workflows), patch_activation_callback=hold
    ):
        handle = await h.start(
            GuardedCallWorkflow.run,
            CallInput(calls=[("lookup", {"order_id": "A1"})], guardrails=[schema(), RULE_CHECK]),
            task_queue=tq,
        )
        result = await handle.result()
    assert [(o["ran"], o["action"]) for o in result] == [(True, "allow")]
    # the newest patch first (a new run carries its marker alone), then those it implies
    assert asked == [
        REST_IN_STEPS, KEPT_RESULTS, RESULT_KEYS, MASK_BEFORE_HISTORY, ANSWER_IN_MODEL_STEP,
        INLINE_BY_DEFAULT,
    ]  # fmt: skip
    history = await handle.fetch_history()
    assert [name for name, _ in steps(history)] == ["duraguard.check", "lookup"]
    await h.replay(history)


def _answer_input(h: Harness) -> AgentInput:
    model = h.script(
        calls(("refund", {"order_id": "A2", "amount": 500})),  # a person is asked
        answer("refunded A2"),
    )
    return AgentInput(
        prompt="refund A2", model=model, tools=["refund"], guardrails=[RULE_CHECK, pii()]
    )


@pytest.mark.parametrize("upgraded_mid_run", [True, False], ids=["upgraded", "new"])
async def test_a_run_started_before_answers_were_judged_in_the_model_step_keeps_its_pass(
    temporal_env: Any, upgraded_mid_run: bool
) -> None:
    """A run parked on a person by a worker of the version before (its calls judged in their
    tool steps, the answer in a pass of its own: the newer patch held back, as that version
    never asked it) is taken over by an upgraded worker: it replays, and its answer still gets
    its pass. A run started on the upgraded worker has its answer judged in the model step.
    Both histories replay."""
    from duraguard._patches import INLINE_BY_DEFAULT, REST_IN_STEPS

    def earlier_version(info: Any) -> bool:
        # That version asked neither this patch nor those after it.
        return info.patch_id == INLINE_BY_DEFAULT

    h = _paired(temporal_env)
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    TOOL_LOG.clear()
    hold = earlier_version if upgraded_mid_run else (lambda _info: True)
    async with Worker(
        h.client, task_queue=tq, workflows=list(h.workflows), patch_activation_callback=hold
    ):
        handle = await h.start(AgentWorkflow.run, _answer_input(h), task_queue=tq)
        (ask,) = await parked(handle)
    async with h.worker(tq):
        await handle.signal(DECIDE, decision_for(ask, approver="manager"))
        result = await handle.result()
    assert (result.stop_reason, result.answer) == ("done", "refunded A2")
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    history = await handle.fetch_history()
    markers = patch_markers(history)
    names = [name for name, _ in steps(history)]
    expected = REST_IN_STEPS if not upgraded_mid_run else INLINE_BY_DEFAULT
    assert len(markers) == 1 and expected in markers[0]
    after_prompt = [
        "refund",  # judged in its own step, which asked and did not run the tool
        "duraguard.ask",
        "duraguard.verify-decision",
        "duraguard.check",  # the yes judged again
        "refund",
    ]
    if upgraded_mid_run:
        # the prompt's pass, then the model; the answer's own pass at the end
        assert names == [
            "duraguard.check",
            "duraguard.model",
            *after_prompt,
            "duraguard.model",
            "duraguard.check",
        ]
    else:
        # the prompt judged in the first model step; pii may mask the refund's arguments, so
        # they get a pass before any step records them (the policy before pii reads the
        # session, which a model step is not sent); the answer is judged in the last model step
        assert (
            names
            == [
                "duraguard.model",
                "duraguard.check",  # the refund's arguments: a person is asked
                *after_prompt[1:],
                "duraguard.model",
            ]
        )
    await h.replay(history)
