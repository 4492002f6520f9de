"""A guarded call: judge it, act on the verdict, run it (or not), judge its result, record it.

The seams any agent loop uses (duraguard's own, or an adapter around another framework):

* :func:`before_calls` judges the calls of one model turn in one recorded pass and settles each
  verdict: a refusal comes back as a :class:`Refusal` (recorded at once: nothing will run), an
  ``approve`` parks the call on a person through the gate, and a yes is judged again with the
  person's grant (so a later guardrail, a budget, still gets its say and edits are checked);
* :func:`after_call` (:mod:`duraguard._after`) takes what the tool returned (judged inside the
  tool's own step where duraguard ran it), settles any budget hold and records the call once.

:func:`guarded_call` is the two around duraguard's own tool activity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._after import after_call, run_tool
from ._bounds import MAX_CALLS_PER_TURN, too_deep
from ._describe import described_for
from ._outcome import (
    DEFAULT_APPROVAL_TIMEOUT,
    CallGate,
    CallOptions,
    CallOutcome,
    Prejudged,
    Refusal,
    RefusalKind,
    refusal,
)
from ._pass import recorded_pass
from ._types import (
    REFUSING,
    Grant,
    NotJSON,
    PassResult,
    Subject,
    Verdict,
    canonical_json,
    merge_egress,
)
from .budget import reservations_of, settle
from .errors import (
    ConfigurationError,
    GuardrailHalt,
)
from .guardrail import GuardrailSpec, to_specs

if TYPE_CHECKING:
    from ._session import GuardSession


def tool_subject(
    session: GuardSession,
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


def _early(
    session: GuardSession, call_id: str, tool: Any, args: Any, opts: CallOptions
) -> CallGate | None:
    """A call refused before any check: a tool that is no name, arguments that are no object."""
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
    session: GuardSession,
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


async def before_calls(
    session: GuardSession,
    calls: Sequence[tuple[str, Any, str | None]],
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> list[CallGate]:
    """Judge every call of one turn in one recorded pass, then settle each verdict (parking on
    a person where asked, concurrently). A call that will not run is recorded here; calls past
    :data:`~duraguard._bounds.MAX_CALLS_PER_TURN` are refused unjudged (:func:`_past_bound`)."""
    gates: dict[int, CallGate] = {}
    todo: list[tuple[int, str, str, dict[str, Any]]] = []
    past = _past_bound(session, calls, opts)
    calls = calls[: len(calls) - len(past)]
    for i, (tool, args, given) in enumerate(calls):
        cid = given or session.next_call_id()
        early = _early(session, cid, tool, args, opts)
        if early is not None:
            gates[i] = early
        else:
            todo.append((i, cid, tool, args))
    if todo:
        ahead = pre.only([i for i, _, _, _ in todo]) if pre is not None else None
        judged = await _judge(session, [(c, t, a) for _, c, t, a in todo], guardrails, opts, ahead)
        halted = any(r.verdict.action == "halt" for r in judged)

        async def settle_one(k: int) -> None:
            i, cid, tool, args = todo[k]
            gates[i] = await _settle(session, cid, tool, args, judged[k], guardrails, opts, halted)

        await asyncio.gather(*(settle_one(k) for k in range(len(todo))))
    return [gates[i] for i in range(len(calls))] + past


def _past_bound(
    session: GuardSession, calls: Sequence[tuple[str, Any, str | None]], opts: CallOptions
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
    for tool, _, given in calls[MAX_CALLS_PER_TURN:]:
        name = tool if isinstance(tool, str) else str(tool)
        cid = given or session.next_call_id()
        key = session.idempotency_key(cid)
        gates.append(
            CallGate(cid, name, {}, {}, v, key, refusal=Refusal.of(v, name), agent=opts.agent)
        )
    return gates


def call_subjects(
    session: GuardSession,
    calls: Sequence[tuple[str, str, dict[str, Any]]],
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    prejudged: tuple[str, ...] = (),
) -> tuple[list[Subject], list[int]]:
    """What one pass over ``calls`` (call id, tool, arguments) judges: each call's arguments,
    then what each would reach outside (``egress``: every URL or host in its arguments) for
    guardrails that declare egress without ``tool-args``; and which call each egress subject
    belongs to."""
    reads = any(g.reads_session for g in specs)
    subjects = [
        tool_subject(
            session,
            cid,
            tool,
            args,
            opts.agent,
            compensation_of=session.undoes(tool, args),
            view=reads,
        )
        for cid, tool, args in calls
    ]
    if prejudged:
        subjects = [s.model_copy(update={"prejudged": prejudged}) for s in subjects]
    egress_of: list[int] = []
    if any(s.applies_to("egress") and not s.applies_to("tool-args") for s in specs):
        from .checks.address import targets

        for k, (cid, tool, args) in enumerate(calls):
            found = [t for _, t in targets(args)]
            if found:
                subjects.append(
                    Subject(
                        placement="egress",
                        value=found,
                        tool=tool,
                        call_id=cid,
                        context=session.context(opts.agent),
                    )
                )
                egress_of.append(k)
    return subjects, egress_of


async def _judge(
    session: GuardSession,
    calls: list[tuple[str, str, dict[str, Any]]],
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
                out[k] = r.model_copy(update={"call_id": calls[k][0]})  # named as the run does
        todo = [k for k in todo if out[k] is None]
    if todo:
        names = pre.names if pre is not None else ()
        subjects, egress_of = call_subjects(session, [calls[k] for k in todo], specs, opts, names)
        results = await recorded_pass(session, specs, subjects, purpose="tool-args", mode=opts.mode)
        for k, r in zip(todo, merge_egress(results, len(todo), egress_of), strict=True):
            first = pre.results[k] if pre is not None else None
            out[k] = first.then(r) if first is not None else r
    return [r for r in out if r is not None]


async def _settle(
    session: GuardSession,
    cid: str,
    tool: str,
    asked: dict[str, Any],
    pr: PassResult,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    halted_sibling: bool,
) -> CallGate:
    """Act on one call's verdict: it runs, is refused, or waits for a person."""
    session.note_pass(pr)
    base = CallGate(
        call_id=cid,
        tool=tool,
        asked=asked,
        args=pr.use(asked),
        verdict=pr.verdict,
        idempotency_key=session.idempotency_key(cid),
        held=tuple(reservations_of(pr.verdicts)),
        agent=opts.agent,
        compensation_of=session.undoes(tool, asked),
    )
    if pr.verdict.action == "approve":
        from ._ask import ask

        return await ask(session, base, specs, opts, halted_sibling)
    if pr.verdict.action in REFUSING:
        return await refuse(session, base, Refusal.of(pr.verdict, tool))
    return base


async def refuse(session: GuardSession, gate: CallGate, why: Refusal, **kw: Any) -> CallGate:
    """The call will not run: give back what it held and record it."""
    await settle(gate.held, ok=False)
    refused = replace(gate, refusal=why, held=(), **kw)
    session.record(refused.outcome(), compensation_of=gate.compensation_of)
    return refused


async def run_calls(
    session: GuardSession,
    calls: Sequence[tuple[str, Any, str | None]],
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> list[tuple[CallGate, CallOutcome]]:
    """The calls of one turn (tool, arguments, call id or ``None``) judged, run where they may
    (concurrently) and recorded, in order. Under check mode ``inline`` a lone call is judged
    inside its own tool step (:mod:`duraguard._inline`). ``pre``: what the first guardrails
    made of each call already (the model step that proposed them)."""
    from . import _inline  # it builds on this module

    first = pre.results[0] if pre is not None and len(calls) == 1 else None
    if _inline.due(session, opts, len(calls)) and not (first is not None and first.tripped):
        ((tool, args, given),) = calls
        cid = given or session.next_call_id()
        early = _early(session, cid, tool, args, opts)
        if early is not None:
            return [(early, early.outcome())]
        done = await _inline.inline_call(session, cid, tool, args, guardrails, opts, pre)
        if done is not None:
            return [done]
        calls = [(tool, args, cid)]
    gates = await before_calls(session, calls, guardrails, opts, pre)

    async def settle_one(g: CallGate) -> tuple[CallGate, CallOutcome]:
        return g, (await run_tool(session, g, guardrails, opts) if g.runs else g.outcome())

    return list(await asyncio.gather(*(settle_one(g) for g in gates)))


async def guarded_call(
    tool: str,
    args: dict[str, Any],
    *,
    guardrails: Sequence[Any] = (),
    call_id: str | None = None,
    options: CallOptions | None = None,
    session: GuardSession | None = None,
) -> CallOutcome:
    """Check one tool call, wait for a person if asked, run it, and check its result.

    A refusal comes back as an outcome with ``ran=False``, its :class:`Refusal` and the shape
    the model reads as ``result``; a ``halt`` raises :class:`GuardrailHalt` (there is no loop to
    end).
    """
    if not isinstance(tool, str) or not tool:
        raise ConfigurationError(f"guarded_call needs a tool name; got {tool!r}")
    if not isinstance(args, dict):
        raise ConfigurationError(
            f"arguments for tool {tool!r} must be a JSON object (a dict); got {type(args).__name__}"
        )
    if session is None:
        from ._session import session as current  # _session imports this module

        session = current()
    s = session
    specs = to_specs(guardrails)
    opts = options or CallOptions()
    ((_, out),) = await run_calls(s, [(tool, args, call_id)], specs, opts)
    if out.halted:
        s.halt(out.verdict.by)
        raise GuardrailHalt(f"halted by guardrail {out.verdict.by!r}", by=out.verdict.by)
    return out


__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "CallGate",
    "CallOptions",
    "CallOutcome",
    "Prejudged",
    "Refusal",
    "RefusalKind",
    "after_call",
    "before_calls",
    "guarded_call",
    "refusal",
    "refuse_early",
    "run_calls",
    "run_tool",
    "tool_subject",
]
