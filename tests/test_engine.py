"""The engine: one ordered pass of guardrails over one subject, in plain Python."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from duraguard import Guardrail, Subject, Verdict, guardrail, pii
from duraguard.budget import reservations_of
from duraguard.engine import GuardrailError, evaluate, evaluate_sync, run_pass
from duraguard.guardrail import GuardrailSpec, Resources
from duraguard.types import PassResult, Reservation


class Scripted(Guardrail):
    """Answers with a fixed verdict (or what ``fn`` makes of the subject) and counts its calls."""

    def __init__(
        self,
        name: str,
        verdict: Verdict | None = None,
        *,
        fn: Callable[[Subject], Any] | None = None,
        placements: Iterable[str] = ("tool-args",),
        timeout: float = 10.0,
        on_error: str = "deny",
        log: list[str] | None = None,
    ) -> None:
        self.name = name
        self.verdict = verdict or Verdict.allow()
        self.fn = fn
        self.placements = frozenset(placements)  # type: ignore[assignment]
        self.timeout = timeout
        self.on_error = on_error  # type: ignore[assignment]
        self.log = log if log is not None else []
        self.seen: list[Any] = []

    async def check(self, subject: Subject) -> Any:
        self.log.append(self.name)
        self.seen.append(subject.value)
        if self.fn is not None:
            out = self.fn(subject)
            return await out if asyncio.iscoroutine(out) else out
        return self.verdict


def _boom(subject: Subject) -> Any:
    raise RuntimeError("detector is down")


async def _slow(subject: Subject) -> Verdict:
    await asyncio.sleep(5)
    return Verdict.allow()


ARGS = {"to": "ana@example.com", "note": "call ana@example.com", "amount": 5}
MASKED = {**ARGS, "note": "call [EMAIL]"}
"""What a mask makes of :data:`ARGS`: the note masked; the recipient is where the call goes,
which no guardrail changes (``tests/test_addresses.py``)."""


def _masked(subject: Subject) -> Verdict:
    return Verdict(action="mask", payload={**subject.value, "note": "call [EMAIL]"})


# -- order and who decides ---------------------------------------------------------------


async def test_guardrails_run_in_the_order_given() -> None:
    log: list[str] = []
    guards = [Scripted(n, log=log) for n in ("first", "second", "third")]
    result = await evaluate(guards, ARGS, tool="send")
    assert log == ["first", "second", "third"]
    assert [v.by for v in result.verdicts] == ["first", "second", "third"]
    assert result.verdict.action == "allow"
    assert result.outcome == "complete"


@pytest.mark.parametrize("action", ["deny", "approve", "halt"])
async def test_first_refusal_decides_and_later_guardrails_do_not_run(action: str) -> None:
    refusing = Scripted("refuser", Verdict(action=action, reason="no"))  # type: ignore[arg-type]
    later = Scripted("later", Verdict.deny("would say something else"))
    result = await evaluate([Scripted("before"), refusing, later], ARGS, tool="send")
    assert result.verdict.action == action
    assert result.verdict.by == "refuser"
    assert len(refusing.seen) == 1
    assert later.seen == []
    assert [v.by for v in result.verdicts] == ["before", "refuser"]
    assert result.tripped


async def test_a_later_guardrail_cannot_overturn_an_earlier_deny_with_a_halt() -> None:
    halting = Scripted("tripwire", Verdict.halt("stop everything"))
    result = await evaluate([Scripted("first", Verdict.deny("no")), halting], ARGS)
    assert result.verdict.action == "deny"
    assert halting.seen == []


async def test_observe_is_recorded_and_the_pass_continues() -> None:
    watching = Scripted("watch", Verdict(action="observe", reason="would refuse"))
    after = Scripted("after")
    result = await evaluate([watching, after], ARGS)
    assert [v.action for v in result.verdicts] == ["observe", "allow"]
    assert after.seen == [ARGS]
    assert result.verdict.action == "allow"
    assert not result.replaced and result.use(ARGS) == ARGS


async def test_observe_does_not_stop_a_later_refusal() -> None:
    result = await evaluate(
        [Scripted("watch", Verdict(action="observe")), Scripted("gate", Verdict.deny("no"))], ARGS
    )
    assert result.verdict.by == "gate"
    assert result.verdict.action == "deny"


@pytest.mark.parametrize("action", ["mask", "rewrite"])
async def test_a_replacement_is_what_later_guardrails_see_and_what_the_pass_returns(
    action: str,
) -> None:
    replacement = MASKED
    replacing = Scripted("redact", Verdict(action=action, payload=replacement))  # type: ignore[arg-type]
    after = Scripted("after")
    result = await evaluate([replacing, after], ARGS, tool="send")
    assert after.seen == [replacement]
    assert result.verdict.action == action
    assert result.verdict.by == "redact"
    assert result.value == replacement
    assert not result.tripped


async def test_a_mask_never_lets_a_later_guardrail_be_skipped_and_it_may_still_refuse() -> None:
    gate = Scripted("gate", fn=lambda s: Verdict.deny(f"still no: {s.value['note']}"))
    result = await evaluate([Scripted("redact", fn=_masked), gate], ARGS)
    assert gate.seen == [MASKED]
    assert result.verdict.action == "deny"
    assert result.verdict.by == "gate"
    assert result.verdict.reason == "still no: call [EMAIL]"
    assert result.value is None


async def test_a_second_mask_builds_on_the_first() -> None:
    def hide_amount(s: Subject) -> Verdict:
        return Verdict(action="mask", payload={**s.value, "amount": 0})

    result = await evaluate([Scripted("a", fn=_masked), Scripted("b", fn=hide_amount)], ARGS)
    assert result.value == {**MASKED, "amount": 0}
    assert result.verdict.by == "b"


async def test_verdicts_are_named_after_the_guardrail_that_gave_them() -> None:
    impostor = Scripted("real-name", Verdict.deny("no", by="someone-else"))
    result = await evaluate([impostor], ARGS)
    assert result.verdict.by == "real-name"


# -- a guardrail that cannot decide refuses --------------------------------------------------


async def test_a_guardrail_that_raises_refuses_with_outcome_partial_naming_it() -> None:
    after = Scripted("after")
    result = await evaluate([Scripted("flaky-detector", fn=_boom), after], ARGS)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert result.verdict.by == "flaky-detector"
    reason = result.verdict.reason or ""
    assert "'flaky-detector'" in reason
    assert "RuntimeError: detector is down" in reason
    assert [d.rule for d in result.verdict.detections] == ["guardrail.error"]
    assert after.seen == []
    assert result.tripped


async def test_a_guardrail_past_its_timeout_refuses_with_outcome_partial() -> None:
    result = await evaluate([Scripted("slow", fn=_slow, timeout=0.05)], ARGS)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert "timed out after 0.05s" in (result.verdict.reason or "")
    assert [d.rule for d in result.verdict.detections] == ["guardrail.timeout"]


class BlocksTheLoop(Guardrail):
    """An async check calling blocking code (``requests.get``, ``time.sleep``) inside."""

    name = "blocks-the-loop"
    timeout = 0.05

    async def check(self, subject: Subject) -> Verdict:
        time.sleep(0.3)  # the point: blocking code in an async check
        return Verdict.allow()


class PlainDefCheck(Guardrail):
    """A subclass whose ``check`` is a plain function, slower than its timeout."""

    name = "plain-def"
    timeout = 0.05

    def check(self, subject: Subject) -> Verdict:  # type: ignore[override]
        time.sleep(0.3)
        return Verdict.allow()


@pytest.mark.parametrize("slow", [BlocksTheLoop, PlainDefCheck])
async def test_an_allow_that_arrives_after_the_timeout_is_not_used(slow: type[Guardrail]) -> None:
    """wait_for cannot interrupt code that blocks the event loop; the late allow still refuses."""
    result = await evaluate([slow()], ARGS)
    assert (result.verdict.action, result.outcome) == ("deny", "partial")
    assert [d.rule for d in result.verdict.detections] == ["guardrail.timeout"]


class ReservesLate(Guardrail):
    """Takes a hold (as the budget check does) and answers after its deadline: the event loop
    was held up past it (a loaded machine, a blocking call)."""

    name = "reserves-late"
    timeout = 0.05

    async def check(self, subject: Subject) -> Verdict:
        time.sleep(0.2)  # the loop held up while the reserve's answer came in
        hold = Reservation(resource="budget", id="w/r/c1", data={"principal": "ana"})
        return Verdict.allow(reservations=(hold,))


async def test_a_late_verdict_s_reservations_ride_on_the_refusal() -> None:
    """The late allow is not used, but the hold it took is named on the refusal, so the loop
    (which releases what a refused call holds) gives it back; dropped, nothing would."""
    result = await evaluate([ReservesLate()], ARGS)
    assert (result.verdict.action, result.outcome) == ("deny", "partial")
    assert [d.rule for d in result.verdict.detections] == ["guardrail.timeout"]
    assert [r.id for r in reservations_of(result.verdicts)] == ["w/r/c1"]


async def test_a_plain_def_check_in_time_is_used() -> None:
    class Quick(PlainDefCheck):
        name = "quick"
        timeout = 5.0

        def check(self, subject: Subject) -> Verdict:  # type: ignore[override]
            return Verdict.deny("no")

    result = await evaluate([Quick()], ARGS)
    assert (result.verdict.action, result.verdict.by) == ("deny", "quick")


async def test_on_error_fail_raises_guardrail_error_carrying_the_original_error() -> None:
    with pytest.raises(GuardrailError) as info:
        await evaluate([Scripted("strict", fn=_boom, on_error="fail")], ARGS)
    assert info.value.guardrail == "strict"
    assert isinstance(info.value.error, RuntimeError)
    assert str(info.value.error) == "detector is down"
    assert info.value.__cause__ is info.value.error
    assert "'strict'" in str(info.value)


async def test_on_error_fail_raises_on_a_timeout() -> None:
    with pytest.raises(GuardrailError) as info:
        await evaluate([Scripted("slow", fn=_slow, timeout=0.05, on_error="fail")], ARGS)
    assert isinstance(info.value.error, TimeoutError)


async def test_a_guardrail_returning_a_non_verdict_refuses_with_outcome_partial() -> None:
    result = await evaluate([Scripted("sloppy", fn=lambda s: {"action": "allow"})], ARGS)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert "returned dict, not a Verdict" in (result.verdict.reason or "")


async def test_a_guardrail_returning_a_non_verdict_under_on_error_fail_raises() -> None:
    sloppy = Scripted("sloppy", fn=lambda s: "yes", on_error="fail")
    with pytest.raises(GuardrailError) as info:
        await evaluate([sloppy], ARGS)
    assert info.value.guardrail == "sloppy"
    assert isinstance(info.value.error, TypeError)


async def test_a_partial_verdict_that_does_not_refuse_leaves_the_pass_partial() -> None:
    shaky = Scripted("shaky", Verdict(action="observe", outcome="partial"))
    result = await evaluate([shaky, Scripted("after")], ARGS)
    assert result.verdict.action == "allow"
    assert result.outcome == "partial"


async def test_an_unknown_custom_guardrail_refuses_partially_and_never_allows() -> None:
    ghost = GuardrailSpec(kind="custom", name="ghost")
    after = Scripted("after")
    result = await evaluate([ghost, after], ARGS, resources=Resources())
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert result.verdict.by == "ghost"
    assert "no custom guardrail named 'ghost'" in (result.verdict.reason or "")
    assert [d.rule for d in result.verdict.detections] == ["guardrail.unavailable"]
    assert after.seen == []


async def test_an_unknown_guardrail_kind_refuses_partially() -> None:
    result = await evaluate([GuardrailSpec(kind="pi", name="pi")], ARGS)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert "unknown guardrail kind 'pi'" in (result.verdict.reason or "")


async def test_an_unbuildable_guardrail_under_on_error_fail_raises() -> None:
    ghost = GuardrailSpec(kind="custom", name="ghost", on_error="fail")
    with pytest.raises(GuardrailError) as info:
        await evaluate([ghost], ARGS)
    assert info.value.guardrail == "ghost"


async def test_a_registered_custom_guardrail_is_found_by_its_spec() -> None:
    impl = Scripted("house-rule", Verdict.deny("house rule"))
    result = await evaluate(
        [impl.spec()], ARGS, resources=Resources(guardrails={"house-rule": impl})
    )
    assert result.verdict.by == "house-rule"
    assert impl.seen == [ARGS]


# -- placements ------------------------------------------------------------------------------


async def test_a_guardrail_that_does_not_declare_the_placement_is_skipped_and_listed() -> None:
    results_only = Scripted("results-only", Verdict.deny("no"), placements=["tool-result"])
    result = await evaluate([results_only, Scripted("args")], ARGS, placement="tool-args")
    assert results_only.seen == []
    assert result.skipped == ("results-only",)
    assert [v.by for v in result.verdicts] == ["args"]
    assert result.verdict.action == "allow"


async def test_a_spec_that_does_not_declare_the_placement_is_skipped_and_listed() -> None:
    guard = pii(placements=["tool-result"], action="deny")
    result = await evaluate([guard], ARGS, placement="tool-args")
    assert result.skipped == ("pii",)
    assert result.verdicts == ()
    assert result.verdict.action == "allow"


# -- the recorded result ---------------------------------------------------------------------


@pytest.mark.parametrize("verdict", [Verdict.deny("no"), Verdict.halt("stop")])
async def test_the_pass_value_is_none_when_it_denies_or_halts(verdict: Verdict) -> None:
    result = await evaluate([Scripted("redact", fn=_masked), Scripted("gate", verdict)], ARGS)
    assert result.value is None


async def test_the_pass_value_under_approve_is_what_would_run_once_approved() -> None:
    gate = Scripted("gate", Verdict.approve("needs a manager", role="manager"))
    result = await evaluate([Scripted("redact", fn=_masked), gate], ARGS)
    assert result.verdict.action == "approve"
    assert result.verdict.ask is not None and result.verdict.ask.role == "manager"
    assert result.value == MASKED


async def test_a_pass_with_nothing_objecting_allows_and_leaves_the_value_as_offered() -> None:
    result = await evaluate([], ARGS)
    assert result.verdict.action == "allow"
    assert result.outcome == "complete"
    assert not result.replaced and result.use(ARGS) == ARGS
    assert result.verdicts == ()


async def test_evaluate_records_placement_tool_call_id_and_digest_of_the_original() -> None:
    result = await evaluate(
        [Scripted("redact", fn=_masked)],
        ARGS,
        placement="tool-args",
        tool="send",
        call_id="call-7",
    )
    assert isinstance(result, PassResult)
    assert (result.placement, result.tool, result.call_id) == ("tool-args", "send", "call-7")
    original = Subject(placement="tool-args", value=ARGS, tool="send")
    assert result.subject_digest == original.digest()


async def test_evaluate_hands_guardrails_the_context_and_the_schema() -> None:
    seen: list[Subject] = []
    spy = Scripted("spy", fn=lambda s: seen.append(s) or Verdict.allow())
    await evaluate(
        [spy], ARGS, tool="send", schema={"type": "object"}, principal="ana", agent="desk"
    )
    (subject,) = seen
    assert subject.context.principal == "ana"
    assert subject.context.agent == "desk"
    assert subject.input_schema == {"type": "object"}
    assert subject.tool == "send"


async def test_run_pass_takes_a_built_subject() -> None:
    subject = Subject(placement="egress", value="https://example.com", call_id="c1")
    result = await run_pass([Scripted("egress-only", placements=["egress"])], subject)
    assert [v.by for v in result.verdicts] == ["egress-only"]
    assert result.call_id == "c1"
    assert result.placement == "egress"


def test_evaluate_sync_runs_a_pass_without_an_event_loop() -> None:
    result = evaluate_sync([Scripted("gate", Verdict.deny("no"))], ARGS, tool="t", call_id="c9")
    assert result.verdict.action == "deny"
    assert result.call_id == "c9"
    assert result.tool == "t"


# -- the @guardrail decorator ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("returned", "action"), [(True, "allow"), (None, "allow"), (False, "deny")]
)
async def test_a_plain_function_guardrail_maps_true_none_false(returned: Any, action: str) -> None:
    @guardrail
    def only_small_amounts(subject: Subject) -> Any:
        return returned

    result = await evaluate([only_small_amounts], ARGS)
    assert result.verdict.action == action
    assert result.verdicts[0].by == "only-small-amounts"
    if action == "deny":
        assert result.verdict.reason == "only-small-amounts refused this tool-args value"
        assert result.outcome == "complete"


async def test_a_function_guardrail_may_return_a_verdict_and_may_be_async() -> None:
    @guardrail(name="recipient-policy")
    async def internal_only(subject: Subject) -> Verdict:
        if subject.value["to"].endswith("@example.com"):
            return Verdict.allow()
        return Verdict.deny("send only to internal recipients")

    inside = await evaluate([internal_only], ARGS)
    outside = await evaluate([internal_only], {**ARGS, "to": "eve@evil.test"})
    assert inside.verdict.action == "allow"
    assert outside.verdict.action == "deny"
    assert outside.verdict.by == "recipient-policy"
    assert outside.verdict.reason == "send only to internal recipients"


async def test_a_function_guardrail_returning_a_bad_type_refuses_partially() -> None:
    @guardrail
    def sloppy(subject: Subject) -> Any:
        return "ok"

    result = await evaluate([sloppy], ARGS)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    reason = result.verdict.reason or ""
    assert "returned str" in reason
    assert "return a Verdict, True/False or None" in reason


async def test_a_function_guardrail_runs_only_at_tool_args_unless_told() -> None:
    @guardrail
    def args_only(subject: Subject) -> bool:
        return False

    @guardrail(placements=["tool-result"])
    def results_only(subject: Subject) -> bool:
        return False

    at_result = await evaluate([args_only, results_only], ARGS, placement="tool-result")
    assert at_result.skipped == ("args-only",)
    assert at_result.verdict.by == "results-only"


async def test_an_admission_that_rewrites_never_skips_the_calls_own_checks() -> None:
    """Admission says who may reach a tool; a rewrite from it must not stand in for the pass
    over the arguments (that would let the call through unjudged)."""
    from duraguard._activities import Runtime
    from duraguard._wire import CheckRequest

    class Rewrites(Guardrail):
        name = "admission-rewrites"
        placements = frozenset({"admission"})

        async def check(self, subject: Subject) -> Verdict:
            return Verdict(action="rewrite", payload={"tool": subject.tool})

    class RefusesArgs(Guardrail):
        name = "refuses-args"
        placements = frozenset({"tool-args"})

        async def check(self, subject: Subject) -> Verdict:
            return Verdict.deny("these arguments are refused")

    resources = Resources(guardrails={g.name: g for g in (Rewrites(), RefusesArgs())})
    runtime = Runtime(
        resources=resources, tools={}, models={}, approvers=None, accept_unsigned=False
    )
    request = CheckRequest(
        guardrails=(Rewrites().spec(), RefusesArgs().spec()),
        subjects=(Subject(placement="tool-args", tool="pay", value={"amount": 5}, call_id="c1"),),
    )
    (result,) = (await runtime.checker.check(request)).results
    assert (result.verdict.action, result.verdict.by) == ("deny", "refuses-args")
