"""A decision that arrives from outside, read in workflow code with no step: malformed,
misaddressed, for another ask or other arguments, replayed, expired or not signed by someone
whose yes counts, it is refused (the gate records why); one that passes is verified on the
worker (:mod:`duraguard._gate`)."""

from __future__ import annotations

import base64
from typing import Any

from pydantic import ValidationError

from ._approvers import Approver, fingerprint
from ._state import Parked, SessionState
from ._wire import PendingAsk
from .approvals import Decision, signed_by

MAX_CHECKS_PER_ASK = 32
"""Decisions verified (one recorded step each) per ask; more are refused unverified."""


def read_decision(
    session: SessionState, args: tuple[Any, ...]
) -> tuple[Decision | None, Parked | None, str | None]:
    """The decision in a message and the ask it answers (of ``session``), or why it is refused."""
    decision, problem = _in_message(args)
    if decision is None:
        return None, None, problem
    parked = session.asks.parked.get(decision.call_id)
    if decision.workflow_id != session.workflow_id:
        return decision, None, "this decision is for another workflow"
    if parked is None:
        waiting = ", ".join(k for k, p in session.asks.parked.items() if not p.decided) or "none"
        why = f"no call {decision.call_id!r} is waiting for a person here (waiting: {waiting})"
        return decision, None, why[:300]
    return decision, parked, _answers(session, parked, decision)


def _in_message(args: tuple[Any, ...]) -> tuple[Decision | None, str | None]:
    """The decision a message carries, or why it carries none."""
    if len(args) != 1:
        return None, f"a decision is one object; this message has {len(args)} arguments"
    raw = args[0]
    try:
        return (raw if isinstance(raw, Decision) else Decision.model_validate(raw)), None
    except ValidationError as err:
        first = err.errors()[0] if err.errors() else {"loc": (), "msg": "invalid"}
        where = ".".join(str(p) for p in first.get("loc", ())) or "(the message)"
        return None, f"malformed decision: {where}: {first.get('msg', 'invalid')}"[:300]


def _answers(session: SessionState, parked: Parked, decision: Decision) -> str | None:
    """Why ``decision`` does not answer the ask ``parked`` (already decided, another ask, other
    arguments, a used nonce, expired, not signed by someone whose yes counts, too many checked
    for it), or ``None`` where it may: the worker's check then decides."""
    ask = parked.ask
    if parked.decided:
        return f"call {decision.call_id!r} was already decided"
    if decision.run_id != ask.run_id or decision.challenge != ask.challenge:
        return (
            "this decision answers another ask (another run, or an earlier ask of this call); "
            "decide the call waiting now"
        )
    if decision.call_digest != ask.call_digest:
        return "this decision was made for other arguments than the call parked"
    if decision.nonce in session.ledger.used_nonces:
        return "this decision's nonce was used before"
    if decision.expires_at < session.now():
        return "this decision expired before it arrived"
    unsigned = unsigned_problem(ask, decision)
    if unsigned is not None:
        return unsigned
    if parked.checks + len(parked.inbox) >= MAX_CHECKS_PER_ASK:
        return (
            f"{MAX_CHECKS_PER_ASK} decisions were already checked for this ask; no more are "
            "accepted for it"
        )
    return None


def unsigned_problem(ask: PendingAsk, decision: Decision) -> str | None:
    """Why ``decision`` is not signed by someone whose yes counts for ``ask``, judged against
    the keys (or the fingerprints) the ask recorded (deterministic: they are in history);
    ``None`` when it may be. Who is still an approver is the worker's check's to say: a person
    removed since the ask was recorded passes here and is refused there.

    An ask recorded with neither (no approvers configured, or more than the ask could record)
    leaves this to the worker's check.
    """
    if not ask.keys and not ask.prints:
        return None
    if decision.signature is None:
        return None if ask.unsigned_ok else "unsigned decision; sign it with your key"
    key = ask.keys.get(decision.approver)
    if key is None and ask.prints:
        key = decision.public_key
        if key is None:
            return (
                "more people may say yes to this ask than it records keys for: send your "
                "public key with the decision (duraguard approve and decision_for do)"
            )
    if key is None:
        return f"{decision.approver!r} is not someone whose yes counts for this ask"
    try:
        approver = Approver(decision.approver, base64.b64decode(key, validate=True))
    except ValueError:
        return "the decision's public key cannot be read" if ask.prints else None
    if ask.prints and fingerprint(approver.name, approver.public_key) not in ask.prints:
        return f"{decision.approver!r} with this key is not someone whose yes counts for this ask"
    if not signed_by(decision, approver):
        return f"the signature does not verify with {decision.approver}'s key"
    return None


__all__ = ["MAX_CHECKS_PER_ASK", "read_decision", "unsigned_problem"]
