"""A turn's guarded calls: judged in one recorded pass, each verdict acted on, run where they
may (concurrently), each recorded once.

The seams any agent loop uses (duraguard's own, or an adapter around another framework):

* :func:`before_calls` judges the calls of one model turn in one recorded pass
  (:mod:`duraguard._judge`) and settles each verdict (:mod:`duraguard._settle`): a refusal comes
  back as a :class:`Refusal` (recorded at once: nothing will run), an ``approve`` parks the call
  on a person (:mod:`duraguard._ask`), and a yes is judged again with the person's grant;
* :func:`run_calls` is the two around duraguard's own tool activity (:mod:`duraguard._after`),
  a lone call judged inside its tool's step where it may be (:mod:`duraguard._inline`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

from . import _inline
from ._after import after_call, run_tool
from ._judge import early, judge_calls, past_bound, refuse_early, tool_subject
from ._outcome import (
    DEFAULT_APPROVAL_TIMEOUT,
    CallGate,
    CallOptions,
    CallOutcome,
    Prejudged,
    ProposedCall,
    Refusal,
    RefusalKind,
    refusal,
)
from ._settle import settle_call
from ._state import SessionState
from .guardrail import GuardrailSpec


async def before_calls(
    session: SessionState,
    calls: Sequence[ProposedCall],
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> list[CallGate]:
    """Judge every call of one turn in one recorded pass, then settle each verdict (parking on
    a person where asked, concurrently). A call that will not run is recorded here; calls past
    :data:`~duraguard._bounds.MAX_CALLS_PER_TURN` are refused unjudged
    (:func:`~duraguard._judge.past_bound`)."""
    gates: dict[int, CallGate] = {}
    todo: list[tuple[int, ProposedCall]] = []
    past = past_bound(session, calls, opts)
    calls = calls[: len(calls) - len(past)]
    for i, given in enumerate(calls):
        call = _named(session, given)
        refused = early(session, call, opts)
        if refused is not None:
            gates[i] = refused
        else:
            todo.append((i, call))
    if todo:
        ahead = pre.only([i for i, _ in todo]) if pre is not None else None
        judged = await judge_calls(session, [c for _, c in todo], guardrails, opts, ahead)
        halted = any(r.verdict.action == "halt" for r in judged)

        async def settle_one(k: int) -> None:
            i, call = todo[k]
            gates[i] = await settle_call(session, call, judged[k], guardrails, opts, halted)

        await asyncio.gather(*(settle_one(k) for k in range(len(todo))))
    return [gates[i] for i in range(len(calls))] + past


async def run_calls(
    session: SessionState,
    calls: Sequence[ProposedCall],
    guardrails: Sequence[GuardrailSpec],
    opts: CallOptions,
    pre: Prejudged | None = None,
) -> list[tuple[CallGate, CallOutcome]]:
    """The calls of one turn judged, run where they may (concurrently) and recorded, in order.
    Under check mode ``inline`` a lone call is judged inside its own tool step
    (:mod:`duraguard._inline`). ``pre``: what the first guardrails made of each call already
    (the model step that proposed them)."""
    first = pre.results[0] if pre is not None and len(calls) == 1 else None
    if _inline.due(session, opts, len(calls)) and not (first is not None and first.tripped):
        call = _named(session, calls[0])
        refused = early(session, call, opts)
        if refused is not None:
            return [(refused, refused.outcome())]
        done = await _inline.inline_call(session, call, guardrails, opts, pre)
        if done is not None:
            return [done]
        calls = [call]
    gates = await before_calls(session, calls, guardrails, opts, pre)

    async def settle_one(g: CallGate) -> tuple[CallGate, CallOutcome]:
        return g, (await run_tool(session, g, guardrails, opts) if g.runs else g.outcome())

    return list(await asyncio.gather(*(settle_one(g) for g in gates)))


def _named(session: SessionState, call: ProposedCall) -> ProposedCall:
    """``call`` with its call id: its own, else the session's next."""
    return call if call.call_id else replace(call, call_id=session.next_call_id())


__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "CallGate",
    "CallOptions",
    "CallOutcome",
    "Prejudged",
    "ProposedCall",
    "Refusal",
    "RefusalKind",
    "after_call",
    "before_calls",
    "refusal",
    "refuse_early",
    "run_calls",
    "run_tool",
    "tool_subject",
]
