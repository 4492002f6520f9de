"""One call's verdict acted on: the call runs, is refused (and recorded), or waits for a person."""

from __future__ import annotations

from collections.abc import Sequence

from ._ask import ask
from ._judge import refuse
from ._outcome import CallGate, CallOptions, ProposedCall, Refusal
from ._state import SessionState
from ._types import REFUSING, PassResult
from .budget import reservations_of
from .guardrail import GuardrailSpec


async def settle_call(
    session: SessionState,
    call: ProposedCall,
    pr: PassResult,
    specs: Sequence[GuardrailSpec],
    opts: CallOptions,
    halted_sibling: bool,
) -> CallGate:
    """Act on one call's verdict (``call`` named already): it runs, is refused, or waits for a
    person."""
    cid, tool, asked = call.id, call.tool, call.args
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
        return await ask(session, base, specs, opts, halted_sibling)
    if pr.verdict.action in REFUSING:
        return await refuse(session, base, Refusal.of(pr.verdict, tool))
    return base
