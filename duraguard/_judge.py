"""A turn's calls judged: the subjects of their arguments, one pass over them, and the calls
refused before any step (a tool that is no name, arguments that are no object, too many calls).

Nothing here acts on a verdict (:mod:`duraguard._settle` does); :func:`refuse` is the one way a
call that will not run is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ._bounds import MAX_CALLS_PER_TURN, too_deep
from ._describe import described_for
from ._outcome import CallGate, CallOptions, Prejudged, ProposedCall, Refusal
from ._pass import recorded_pass
from ._state import SessionState
from ._types import Grant, NotJSON, PassResult, Subject, Verdict, canonical_json, merge_egress
from .budget import settle
from .checks.address import targets
from .guardrail import GuardrailSpec


def tool_subject(
    session: SessionState,
    call_id: str,
    tool: str,
    args: Any,
    agent: str | None,
    *,
    grant: Grant | None = None,
    compensation_of: int | None = None,
    view: bool = True,
) -> Subject:
    """The subject of a call's arguments; with ``view=False`` (no guardrail of the pass reads
    the session) no session view is built."""
    return Subject(
        placement="tool-args",
        value=args,
        tool=tool,
        call_id=call_id,
        context=session.context(agent),
        session=session.view(tool, args, compensation_of=compensation_of) if view else None,
        grant=grant,
        described=described_for(session.described, tool) if session.described else (),
    )


def early(session: SessionState, call: ProposedCall, opts: CallOptions) -> CallGate | None:
    """A call refused before any check: a tool that is no name, arguments that are no object
    (``call`` named already)."""
    call_id, tool, args = call.id, call.tool, call.args
    why: str | None = None
    if not isinstance(tool, str) or not tool:
        why = f"a tool call needs a tool name; got {tool!r}"
    elif not isinstance(args, dict):
        why = f"arguments for tool {tool!r} must be a JSON object; got {type(args).__name__}"
    else:
        deep = too_deep(args, f"the arguments of {tool!r}")
        if deep is not None:
            # Nothing walks them (a digest, provenance) and nothing writes them as they are.
            return refuse_early(session, call_id, tool, {}, deep, opts, check="duraguard.depth")
        try:
            canonical_json(args)
        except NotJSON as err:
            why = f"arguments for tool {tool!r} are not plain JSON: {err}"
    if why is None:
        return None
    return refuse_early(session, call_id, str(tool), args, why, opts, check="duraguard.arguments")


def refuse_early(
    session: SessionState,
    call_id: str,
    tool: str,
    args: Any,
    why: str,
    opts: CallOptions,
    *,
    check: str,
) -> CallGate:
    """Refuse a call in workflow code (no step: nothing runs) and record it."""
    v = Verdict.deny(why, by="duraguard", check=check)
    gate = CallGate(
        call_id=call_id,
        tool=tool,
        asked=args,
        args=args,
        verdict=v,
        idempotency_key=session.idempotency_key(call_id),
        refusal=Refusal.of(v, tool),
        agent=opts.agent,
    )
    session.note_pass(PassResult(verdict=v, verdicts=(v,), tool=tool, call_id=call_id))
    session.record(gate.outcome())
    return gate


def past_bound(
    session: SessionState, calls: Sequence[ProposedCall], opts: CallOptions
) -> list[CallGate]:
    """The calls of a turn past :data:`MAX_CALLS_PER_TURN`, refused with no step and no walk of
    their arguments: a turn's calls are judged and settled in one workflow task, and one that
    grows without bound trips the SDK's deadlock detector. One audit row says how many; the
    calls are not recorded one by one (they did not run, and are not judged)."""
    extra = len(calls) - MAX_CALLS_PER_TURN
    if extra <= 0:
        return []
    why = (
        f"this turn proposed {len(calls)} tool calls; at most {MAX_CALLS_PER_TURN} are judged "
        f"in one turn, and the other {extra} did not run. Propose fewer calls in one turn"
    )
    v = Verdict.deny(why, by="duraguard", check="duraguard.calls-per-turn")
    session.note_pass(PassResult(verdict=v, verdicts=(v,)))
    gates = []
    for call in calls[MAX_CALLS_PER_TURN:]:
        name = call.tool if isinstance(call.tool, str) else str(call.tool)
        cid = call.call_id or session.next_call_id()
        key = session.idempotency_key(cid)
        gates.append(
            CallGate(cid, name, {}, {}, v, key, refusal=Refusal.of(v, name), agent=opts.agent)
        )
    return gates


def call_subjects(
    session: SessionState,
    calls: Sequence[ProposedCall],
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    prejudged: tuple[str, ...] = (),
) -> tuple[list[Subject], list[int]]:
    """What one pass over ``calls`` (named already) judges: each call's arguments,
    then what each would reach outside (``egress``: every URL or host in its arguments) for
    guardrails that declare egress without ``tool-args``; and which call each egress subject
    belongs to."""
    reads = any(g.reads_session for g in specs)
    subjects = [
        tool_subject(
            session,
            c.id,
            c.tool,
            c.args,
            opts.agent,
            compensation_of=session.undoes(c.tool, c.args),
            view=reads,
        )
        for c in calls
    ]
    if prejudged:
        subjects = [s.model_copy(update={"prejudged": prejudged}) for s in subjects]
    egress_of: list[int] = []
    if any(s.applies_to("egress") and not s.applies_to("tool-args") for s in specs):
        for k, c in enumerate(calls):
            found = [t for _, t in targets(c.args)]
            if found:
                subjects.append(
                    Subject(
                        placement="egress",
                        value=found,
                        tool=c.tool,
                        call_id=c.id,
                        context=session.context(opts.agent),
                    )
                )
                egress_of.append(k)
    return subjects, egress_of


async def judge_calls(
    session: SessionState,
    calls: list[ProposedCall],
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> list[PassResult]:
    """One pass over the arguments of every call and what each would reach outside; a call's
    egress refusal decides where its arguments did not. With ``pre`` (what the model step's
    guardrails made of the calls), the pass goes on from there: a call they refused or asked
    about is not judged again."""
    out: list[PassResult | None] = [None] * len(calls)
    todo = list(range(len(calls)))
    if pre is not None:
        for k, r in enumerate(pre.results):
            if r is not None and r.verdict.refuses:
                out[k] = r.model_copy(update={"call_id": calls[k].id})  # named as the run does
        todo = [k for k in todo if out[k] is None]
    if todo:
        names = pre.names if pre is not None else ()
        subjects, egress_of = call_subjects(session, [calls[k] for k in todo], specs, opts, names)
        results = await recorded_pass(session, specs, subjects, purpose="tool-args", mode=opts.mode)
        for k, r in zip(todo, merge_egress(results, len(todo), egress_of), strict=True):
            first = pre.results[k] if pre is not None else None
            out[k] = first.then(r) if first is not None else r
    return [r for r in out if r is not None]


async def refuse(session: SessionState, gate: CallGate, why: Refusal, **kw: Any) -> CallGate:
    """The call will not run: give back what it held and record it."""
    await settle(gate.held, ok=False)
    refused = replace(gate, refusal=why, held=(), **kw)
    session.record(refused.outcome(), compensation_of=gate.compensation_of)
    return refused
