"""A person's decision on a parked call: a signed statement bound to that exact call.

The statement names the workflow, the call id, a digest of the tool and its canonical
arguments, the digest of any edits, the decision, an expiry and a nonce. It is signed with
Ed25519 (``cryptography``) and checked on the worker, in a recorded step: a yes for another
call, for altered arguments, past its expiry, replayed with a used nonce, from an unknown key,
or from a person without the role the rule asked for is refused.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._types import canonical_json, digest
from .errors import ConfigurationError

DecisionKind = Literal["approve", "deny"]


def call_digest(tool: str, args: Any) -> str:
    """What a yes is bound to: the tool and its canonical arguments."""
    return digest({"tool": tool, "args": args})


class Decision(BaseModel):
    """A person's yes or no on one parked call, as it arrives by signal or update."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow_id: str
    call_id: str
    call_digest: str
    decision: DecisionKind
    approver: str
    """Who decided: the name their key is registered under."""
    edits: dict[str, Any] | None = None
    """Arguments the person changed (merged over the model's); checked again before use."""
    edits_digest: str | None = None
    reason: str | None = None
    expires_at: float
    """Seconds since the epoch after which this statement is void."""
    nonce: str = Field(default_factory=lambda: secrets.token_hex(12))
    signature: str | None = None
    """Base64 Ed25519 signature over :meth:`statement`; ``None`` when unsigned."""

    def statement(self) -> bytes:
        """The exact bytes that are signed."""
        return canonical_json(
            {
                "v": 1,
                "workflow_id": self.workflow_id,
                "call_id": self.call_id,
                "call_digest": self.call_digest,
                "decision": self.decision,
                "approver": self.approver,
                "edits_digest": self.edits_digest,
                "expires_at": self.expires_at,
                "nonce": self.nonce,
            }
        ).encode()


class ApprovalCheck(BaseModel):
    """The recorded outcome of checking a decision."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    reason: str = ""
    approver: str | None = None
    roles: tuple[str, ...] = ()
    call_id: str | None = None
    decision: DecisionKind | None = None
    tool: str | None = None
    said: str | None = None
    """The approver's own reason, as they gave it (kept here because a local step keeps no input)."""


@dataclass(frozen=True)
class Approver:
    """Someone whose yes counts: a name, an Ed25519 public key, and roles."""

    name: str
    public_key: bytes
    """Raw 32-byte Ed25519 public key."""
    roles: frozenset[str] = field(default_factory=frozenset)


class ApproverKeys:
    """The approvers a worker trusts, by name."""

    def __init__(self, approvers: Iterable[Approver] = ()) -> None:
        self._by_name: dict[str, Approver] = {}
        for a in approvers:
            if a.name in self._by_name:
                raise ConfigurationError(
                    f"approver {a.name!r} is listed twice; give each person one key"
                )
            if len(a.public_key) != 32:
                raise ConfigurationError(
                    f"approver {a.name!r}: an Ed25519 public key is 32 bytes; got {len(a.public_key)}"
                )
            self._by_name[a.name] = a

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Approver]:
        return iter(self._by_name.values())

    def get(self, name: str) -> Approver | None:
        return self._by_name.get(name)

    def roles(self) -> frozenset[str]:
        """Every role some registered approver holds."""
        return frozenset(r for a in self._by_name.values() for r in a.roles)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ApproverKeys:
        """From ``{"alice": {"public_key": "<base64 or PEM>", "roles": ["manager"]}}``."""
        out = []
        for name, entry in data.items():
            if isinstance(entry, str | bytes):
                entry = {"public_key": entry}
            out.append(
                Approver(
                    name, load_public_key(entry["public_key"]), frozenset(entry.get("roles", ()))
                )
            )
        return cls(out)

    @classmethod
    def from_file(cls, path: str | Path) -> ApproverKeys:
        """From a YAML or JSON file of the :meth:`from_mapping` shape."""
        import yaml

        p = Path(path)
        try:
            data = yaml.load(p.read_text(), Loader=_unique_key_loader())
        except FileNotFoundError:
            raise ConfigurationError(
                f"approvers file {p} does not exist; make keys with `duraguard keygen NAME`"
            ) from None
        if not isinstance(data, dict):
            raise ConfigurationError(
                f"approvers file {p} must map names to keys, e.g. alice: {{public_key: ..., roles: [manager]}}"
            )
        return cls.from_mapping(data)


def _unique_key_loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """A safe loader that refuses a name listed twice instead of keeping the last."""

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigurationError(
                    f"{key!r} is listed twice (line {key_node.start_mark.line + 1}); list each "
                    "approver once, with one key, and each of their fields once"
                )
            seen.add(key)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Loader


def load_public_key(data: str | bytes) -> bytes:
    """A raw Ed25519 public key from PEM, base64 or raw bytes."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw_given = isinstance(data, bytes)  # text is PEM or base64, never raw key bytes
    if isinstance(data, str):
        data = data.strip().encode()
    if data.startswith(b"-----BEGIN"):
        key = serialization.load_pem_public_key(data)
        if not isinstance(key, Ed25519PublicKey):
            raise ConfigurationError(
                "the public key is not an Ed25519 key; make one with `duraguard keygen NAME`"
            )
        return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if raw_given and len(data) == 32:
        return data
    try:
        raw = base64.b64decode(data, validate=True)
    except Exception:
        raise ConfigurationError(
            "cannot read the public key: give PEM, base64 or 32 raw bytes"
        ) from None
    if len(raw) != 32:
        raise ConfigurationError(f"an Ed25519 public key is 32 bytes; this one is {len(raw)}")
    return raw


def generate_keypair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as (private PEM, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def load_private_key(pem: bytes | str | Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if isinstance(pem, Path):
        pem = pem.read_bytes()
    if isinstance(pem, str):
        pem = pem.encode()
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError(
            "the private key is not an Ed25519 key; make one with `duraguard keygen NAME`"
        )
    return key


def sign(decision: Decision, private_key: Any) -> Decision:
    """Return ``decision`` with its signature set."""
    if isinstance(private_key, bytes | str | Path):
        private_key = load_private_key(private_key)
    sig = private_key.sign(decision.statement())
    return decision.model_copy(update={"signature": base64.b64encode(sig).decode()})


def make_decision(
    *,
    workflow_id: str,
    call_id: str,
    tool: str,
    args: Any,
    decision: DecisionKind,
    approver: str,
    edits: dict[str, Any] | None = None,
    reason: str | None = None,
    ttl_seconds: float = 3600.0,
    private_key: Any = None,
    now: float | None = None,
) -> Decision:
    """Build (and, given a key, sign) a decision bound to one call."""
    d = Decision(
        workflow_id=workflow_id,
        call_id=call_id,
        call_digest=call_digest(tool, args),
        decision=decision,
        approver=approver,
        edits=edits,
        edits_digest=digest(edits) if edits is not None else None,
        reason=reason,
        expires_at=(time.time() if now is None else now) + ttl_seconds,
    )
    return sign(d, private_key) if private_key is not None else d


def verify(
    decision: Decision,
    *,
    workflow_id: str,
    call_id: str,
    tool: str,
    args: Any,
    keys: ApproverKeys | None,
    now: float,
    used_nonces: Iterable[str] = (),
    role: str | None = None,
    accept_unsigned: bool = False,
) -> ApprovalCheck:
    """Check that ``decision`` is a valid, unexpired, unused statement about this exact call."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    def no(why: str) -> ApprovalCheck:
        return ApprovalCheck(
            ok=False,
            reason=why,
            approver=decision.approver,
            call_id=call_id,
            decision=decision.decision,
        )

    if decision.workflow_id != workflow_id or decision.call_id != call_id:
        return no(
            f"this decision is for {decision.workflow_id}/{decision.call_id}, not {workflow_id}/{call_id}"
        )
    if decision.call_digest != call_digest(tool, args):
        return no(
            "this decision was made for other arguments than the call now parked (altered call)"
        )
    if decision.edits is not None and decision.edits_digest != digest(decision.edits):
        return no("the edits do not match the digest that was signed")
    if decision.edits is None and decision.edits_digest is not None:
        return no("the signed statement names edits that did not arrive")
    if now > decision.expires_at:
        return no("this decision expired before it arrived")
    if decision.nonce in set(used_nonces):
        return no("this decision's nonce was used before (a replayed decision)")
    approver = keys.get(decision.approver) if keys is not None else None
    if decision.signature is None:
        if not accept_unsigned:
            return no("unsigned decision; sign it with `duraguard approve ... --key FILE`")
        roles: tuple[str, ...] = tuple(sorted(approver.roles)) if approver else ()
        if role is not None and (approver is None or role not in approver.roles):
            return no(f"{decision.approver} does not have the role {role!r} this call needs")
        return ApprovalCheck(
            ok=True,
            reason="unsigned (accepted for local development)",
            approver=decision.approver,
            roles=roles,
            call_id=call_id,
            decision=decision.decision,
        )
    if approver is None:
        return no(f"unknown approver {decision.approver!r}: no public key is registered for them")
    try:
        Ed25519PublicKey.from_public_bytes(approver.public_key).verify(
            base64.b64decode(decision.signature), decision.statement()
        )
    except (InvalidSignature, ValueError):
        return no(f"the signature does not verify with {decision.approver}'s key")
    if role is not None and role not in approver.roles:
        return no(
            f"{decision.approver} does not have the role {role!r} this call needs (has: {', '.join(sorted(approver.roles)) or 'none'})"
        )
    return ApprovalCheck(
        ok=True,
        approver=decision.approver,
        roles=tuple(sorted(approver.roles)),
        call_id=call_id,
        decision=decision.decision,
    )


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
    query), bound to it and signed when a key is given: what ``duraguard approve`` sends.

    Send it with ``await handle.execute_update(duraguard.DECIDE, d, result_type=ApprovalCheck)``
    (answered at once) or ``await handle.signal(duraguard.DECIDE, d)``.
    """
    return make_decision(
        workflow_id=ask.workflow_id,
        call_id=ask.call_id,
        tool=ask.tool,
        args=ask.args,
        decision=decision,
        approver=approver,
        edits=edits,
        reason=reason,
        ttl_seconds=ttl_seconds,
        private_key=private_key,
        now=now,
    )
