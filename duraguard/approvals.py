"""A person's decision on a parked call: a signed statement bound to that exact ask.

The statement names the workflow, the run, the call id, a digest of the tool and its canonical
arguments, the challenge the workflow drew when it parked the call, the digest of any edits,
the decision, the person's own reason, an expiry and a nonce. It is signed with Ed25519
(``cryptography``) and checked on the worker, in a recorded step: a yes for another call, for
another run (the same workflow id started again), for altered arguments, past its expiry,
replayed with a used nonce, from an unknown key, or from a person without the role the rule
asked for is refused; so is any field changed after signing (the reason included).
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._approvers import (
    Approver,
    ApproverKeys,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from ._bounds import too_deep
from ._types import Grant, NotJSON, canonical_json, digest
from ._types import call_digest as call_digest
from ._updates import send_update

DecisionKind = Literal["approve", "deny"]

STATEMENT_VERSION = 2
MAX_EDITS_BYTES = 65_536
"""The largest edits a person may send with a decision (canonical JSON)."""


DECIDE = "duraguard.decide"
"""The signal and update a run that asks a person waits on: payload a :class:`Decision`; the
update answers with an :class:`ApprovalCheck` (:func:`send_decision` sends it)."""


class Decision(BaseModel):
    """A person's yes or no on one parked call, as it arrives by signal or update.

    Every field is bounded: a decision is read from outside, and an oversized one is refused
    before it reaches history.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    workflow_id: str = Field(min_length=1, max_length=1000)
    run_id: str = Field(default="", max_length=64)
    """The run that asked: a yes never carries over to another run of the same workflow id."""
    call_id: str = Field(min_length=1, max_length=128)
    call_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    challenge: str = Field(default="", max_length=64)
    """What the workflow drew when it parked this call (:attr:`PendingAsk.challenge`)."""
    decision: DecisionKind
    approver: str = Field(min_length=1, max_length=200)
    """Who decided: the name their key is registered under."""
    edits: dict[str, Any] | None = None
    """Arguments the person changed (merged over the model's); checked again before use."""
    edits_digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    reason: str | None = Field(default=None, max_length=2000)
    """The person's own words; signed, so nobody can put other words in their mouth."""
    expires_at: float
    """Seconds since the epoch after which this statement is void."""
    nonce: str = Field(
        default_factory=lambda: secrets.token_hex(12), pattern=r"^[A-Za-z0-9_-]{8,64}$"
    )
    """Given explicitly by :func:`make_decision`: a converter that leaves unset fields out
    (``exclude_unset``) would otherwise make the receiver draw a new one."""
    signature: str | None = Field(default=None, max_length=200)
    """Base64 Ed25519 signature over :meth:`statement`; ``None`` when unsigned."""
    public_key: str | None = Field(default=None, max_length=64, exclude_if=lambda v: v is None)
    """The signer's public key (base64, not signed: a signature verifies with it or it does
    not), sent where the ask recorded fingerprints of its approvers rather than their keys
    (:attr:`PendingAsk.prints`: more people may say yes than it records keys for)."""

    @field_validator("edits")
    @classmethod
    def _bounded_edits(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        deep = too_deep(v, "edits")
        if deep is not None:
            raise ValueError(deep)
        try:
            size = len(canonical_json(v).encode())
        except NotJSON as err:
            raise ValueError(f"edits must be plain JSON: {err}") from None
        if size > MAX_EDITS_BYTES:
            raise ValueError(f"edits are {size} bytes; at most {MAX_EDITS_BYTES} are accepted")
        return v

    def statement(self) -> bytes:
        """The exact bytes that are signed: every field a person states, bound to the ask."""
        return canonical_json(
            {
                "v": STATEMENT_VERSION,
                "workflow_id": self.workflow_id,
                "run_id": self.run_id,
                "call_id": self.call_id,
                "call_digest": self.call_digest,
                "challenge": self.challenge,
                "decision": self.decision,
                "approver": self.approver,
                "edits_digest": self.edits_digest,
                "reason": self.reason,
                "expires_at": self.expires_at,
                "nonce": self.nonce,
            }
        ).encode()


class ApprovalCheck(BaseModel):
    """The recorded outcome of checking a decision."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    ok: bool
    reason: str = ""
    approver: str | None = None
    roles: tuple[str, ...] = ()
    call_id: str | None = None
    decision: DecisionKind | None = None
    tool: str | None = None
    said: str | None = None
    """The approver's own reason, as they gave it (kept here because a local step keeps no input)."""
    nonce: str | None = None

    def grant(self, tool: str | None, args: Any) -> Grant | None:
        """The yes this check stands for, bound to ``tool(args)`` as it will run; ``None`` for a
        refused decision or a no."""
        if not self.ok or self.decision != "approve" or not self.approver or not self.call_id:
            return None
        return Grant(
            approver=self.approver,
            roles=self.roles,
            call_id=self.call_id,
            call_digest=call_digest(tool, args),
            nonce=self.nonce or "",
        )


def sign(decision: Decision, private_key: Any, *, with_public_key: bool = False) -> Decision:
    """Return ``decision`` with its signature set (and, ``with_public_key``, the signer's key:
    an ask that recorded its approvers' fingerprints checks the signature with it)."""
    if isinstance(private_key, bytes | str | Path):
        private_key = load_private_key(private_key)
    sig = private_key.sign(decision.statement())
    update = {"signature": base64.b64encode(sig).decode()}
    if with_public_key:
        from cryptography.hazmat.primitives import serialization

        raw = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        update["public_key"] = base64.b64encode(raw).decode()
    return decision.model_copy(update=update)


def make_decision(
    *,
    workflow_id: str,
    call_id: str,
    tool: str | None,
    args: Any,
    decision: DecisionKind,
    approver: str,
    run_id: str = "",
    challenge: str = "",
    edits: dict[str, Any] | None = None,
    reason: str | None = None,
    ttl_seconds: float = 3600.0,
    private_key: Any = None,
    now: float | None = None,
    with_public_key: bool = False,
) -> Decision:
    """Build (and, given a key, sign) a decision bound to one ask of one run."""
    d = Decision(
        workflow_id=workflow_id,
        run_id=run_id,
        call_id=call_id,
        call_digest=call_digest(tool, args),
        challenge=challenge,
        decision=decision,
        approver=approver,
        edits=edits,
        edits_digest=digest(edits) if edits is not None else None,
        reason=reason,
        expires_at=(time.time() if now is None else now) + ttl_seconds,
        nonce=secrets.token_hex(12),
    )
    if private_key is None:
        return d
    return sign(d, private_key, with_public_key=with_public_key)


def verify(
    decision: Decision,
    *,
    workflow_id: str,
    call_id: str,
    tool: str | None,
    args: Any,
    keys: ApproverKeys | None,
    now: float,
    run_id: str = "",
    challenge: str = "",
    used_nonces: Iterable[str] = (),
    role: str | None = None,
    accept_unsigned: bool = False,
) -> ApprovalCheck:
    """Check that ``decision`` is a valid, unexpired, unused statement about this exact ask.

    This is the one verifier of a person's yes: the workflow's decision step calls it, and so
    does plain Python code that checks a decision before :meth:`ApprovalCheck.grant`.
    """

    def result(why: str | None, roles: tuple[str, ...] = (), note: str = "") -> ApprovalCheck:
        return ApprovalCheck(
            ok=why is None,
            reason=why or note,
            approver=decision.approver,
            roles=roles if why is None else (),
            call_id=call_id,
            decision=decision.decision,
            nonce=decision.nonce,
        )

    why = _unbound(decision, workflow_id, run_id, call_id, challenge, tool, args)
    if why is None and now > decision.expires_at:
        why = "this decision expired before it arrived"
    if why is None and decision.nonce in set(used_nonces):
        why = "this decision's nonce was used before (a replayed decision)"
    if why is None and keys is not None and keys.problem:
        why = keys.problem  # the approvers file no longer reads: nobody's yes counts
    if why is not None:
        return result(why)
    approver = keys.get(decision.approver) if keys is not None else None
    roles: tuple[str, ...] = tuple(sorted(approver.roles)) if approver else ()
    note = ""
    if decision.signature is None:
        if not accept_unsigned:
            return result("unsigned decision; sign it with `duraguard approve ... --key FILE`")
        note = "unsigned (accepted for local development)"
    elif approver is None:
        return result(
            f"unknown approver {decision.approver!r}: no public key is registered for them"
        )
    elif not signed_by(decision, approver):
        return result(f"the signature does not verify with {decision.approver}'s key")
    if role is not None and role not in roles:
        has = ", ".join(roles) or "none"
        return result(
            f"{decision.approver} does not have the role {role!r} this call needs (has: {has})"
        )
    return result(None, roles, note)


def _unbound(
    decision: Decision,
    workflow_id: str,
    run_id: str,
    call_id: str,
    challenge: str,
    tool: str | None,
    args: Any,
) -> str | None:
    """Why ``decision`` is not about this ask of this run (or ``None`` when it is)."""
    if decision.workflow_id != workflow_id or decision.call_id != call_id:
        return f"this decision is for {decision.workflow_id}/{decision.call_id}, not {workflow_id}/{call_id}"
    if decision.run_id != run_id:
        return (
            "this decision was made for another run of this workflow (a yes never carries over "
            "to a new run); decide the call that is waiting now"
        )
    if decision.challenge != challenge:
        return "this decision answers another ask than the one waiting now; decide it again"
    try:
        bound = call_digest(tool, args)
    except NotJSON:
        return "the call's arguments are not plain JSON, so no yes can be bound to them"
    if decision.call_digest != bound:
        return "this decision was made for other arguments than the call now parked (altered call)"
    if decision.edits is not None and decision.edits_digest != digest(decision.edits):
        return "the edits do not match the digest that was signed"
    if decision.edits is None and decision.edits_digest is not None:
        return "the signed statement names edits that did not arrive"
    return None


def signed_by(decision: Decision, approver: Approver) -> bool:
    """Whether ``decision`` carries a valid Ed25519 signature by ``approver``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(approver.public_key).verify(
            base64.b64decode(decision.signature or "", validate=True), decision.statement()
        )
    except (InvalidSignature, ValueError, TypeError):
        # TypeError: a statement canonical JSON cannot carry (NotJSON); it was never signed.
        return False
    return True


def decision_for(
    ask: Any,
    *,
    approver: str,
    decision: DecisionKind = "approve",
    private_key: Any = None,
    edits: dict[str, Any] | None = None,
    reason: str | None = None,
    ttl_seconds: float = 3600.0,
    now: float | None = None,
) -> Decision:
    """A decision on a parked call (a :class:`duraguard.PendingAsk` from the ``duraguard.pending``
    query or from history), bound to it and signed when a key is given: what ``duraguard
    approve`` sends.

    Send it with ``await send_decision(client, d)`` (answered at once, sent again where the
    server aborts it) or ``await handle.signal(duraguard.DECIDE, d)``.
    """
    return make_decision(
        workflow_id=ask.workflow_id,
        run_id=ask.run_id,
        call_id=ask.call_id,
        challenge=ask.challenge,
        tool=ask.tool,
        args=ask.args,
        decision=decision,
        approver=approver,
        edits=edits,
        reason=reason,
        ttl_seconds=ttl_seconds,
        private_key=private_key,
        now=now,
        with_public_key=bool(getattr(ask, "prints", ())),
    )


async def send_decision(
    to: Any, decision: Decision, *, rpc_timeout: timedelta | None = None
) -> ApprovalCheck:
    """Send a person's ``decision`` to the run that asked for it (``to``: a client, or a handle
    for that workflow and run) by the :data:`DECIDE` update; the run's answer: ``ok``, or why not.
    Where the server aborts the update (a failed workflow task, updates dropped in flight), it
    goes again under one id, a digest of the signed decision: sent twice, it is taken once and
    both get the first answer (a refusal too: after fixing its cause, make a new decision).
    ``rpc_timeout`` bounds the whole send. Raises ``WorkflowUpdateFailedError`` where the run
    refused it unread (malformed, misaddressed, the ask gone), the SDK's RPC timeout error where
    no worker answered, ``RPCError`` otherwise (the last abort too: safe to send again)."""
    if not isinstance(decision, Decision):
        what = type(decision).__name__
        raise TypeError(f"send_decision takes a Decision (from decision_for), not a {what}")
    if hasattr(to, "get_workflow_handle"):
        to = to.get_workflow_handle(decision.workflow_id, run_id=decision.run_id or None)
    else:
        wid, rid = getattr(to, "id", None), getattr(to, "run_id", None)
        if wid != decision.workflow_id or (rid and decision.run_id and rid != decision.run_id):
            raise ValueError(
                f"the decision is for workflow {decision.workflow_id!r} run {decision.run_id!r}, "
                f"the handle is for {wid!r} run {rid!r}; pass the client, and its own run is used"
            )
    update_id = "duraguard-decision/" + digest(canonical_json(decision.model_dump(mode="json")))
    answer: ApprovalCheck = await send_update(
        to, DECIDE, decision, id=update_id, result_type=ApprovalCheck, rpc_timeout=rpc_timeout
    )
    return answer


__all__ = [
    "DECIDE",
    "ApprovalCheck",
    "Approver",
    "ApproverKeys",
    "Decision",
    "DecisionKind",
    "call_digest",
    "decision_for",
    "generate_keypair",
    "load_private_key",
    "load_public_key",
    "make_decision",
    "send_decision",
    "sign",
    "signed_by",
    "verify",
]
