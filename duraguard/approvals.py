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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._types import Grant, NotJSON, canonical_json, digest
from ._types import call_digest as call_digest
from .errors import ConfigurationError

DecisionKind = Literal["approve", "deny"]

STATEMENT_VERSION = 2
MAX_EDITS_BYTES = 65_536
"""The largest edits a person may send with a decision (canonical JSON)."""


class Decision(BaseModel):
    """A person's yes or no on one parked call, as it arrives by signal or update.

    Every field is bounded: a decision is read from outside, and an oversized one is refused
    before it reaches history.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    signature: str | None = Field(default=None, max_length=200)
    """Base64 Ed25519 signature over :meth:`statement`; ``None`` when unsigned."""

    @field_validator("edits")
    @classmethod
    def _bounded_edits(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
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
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "approvers") -> ApproverKeys:
        """From ``{"alice": {"public_key": "<base64 or PEM>", "roles": ["manager"]}}``.

        Raises:
            ConfigurationError: an entry that cannot be read; the message names ``where``, the
                entry and the fix.
        """
        if not isinstance(data, Mapping):
            raise ConfigurationError(
                f"{where} must map names to keys, e.g. alice: {{public_key: ..., roles: [manager]}}"
            )
        return cls(_approver(str(name), entry, where) for name, entry in data.items())

    @classmethod
    def from_file(cls, path: str | Path) -> ApproverKeys:
        """From a YAML or JSON file of the :meth:`from_mapping` shape."""
        import yaml

        p = Path(path)
        try:
            data = yaml.load(p.read_text(), Loader=_unique_key_loader(p))
        except FileNotFoundError:
            raise ConfigurationError(
                f"approvers file {p} does not exist; make keys with `duraguard keygen NAME`"
            ) from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(err, "problem", None) or str(err)
            raise ConfigurationError(
                f"approvers file {p} is not valid YAML{at}: {problem}; each entry looks like "
                "'alice: {public_key: <base64>, roles: [manager]}'"
            ) from None
        if data is None:
            raise ConfigurationError(
                f"approvers file {p} is empty; add people with `duraguard keygen NAME --approvers {p}`"
            )
        return cls.from_mapping(data, where=f"approvers file {p}")


_ENTRY_FIELDS = ("public_key", "roles")


def _approver(name: str, entry: Any, where: str) -> Approver:
    """One approver from its entry, or an error naming the entry and the fix."""
    at = f"{where}, entry {name!r}"
    example = f"{name}: {{public_key: <base64 or PEM>, roles: [manager]}}"
    if not name.strip():
        raise ConfigurationError(f"{at}: an approver needs a name; write {example}")
    if isinstance(entry, str | bytes):
        entry = {"public_key": entry}
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{at} must be a mapping; write {example}")
    unknown = [k for k in entry if k not in _ENTRY_FIELDS]
    if unknown:
        import difflib

        close = difflib.get_close_matches(str(unknown[0]), _ENTRY_FIELDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigurationError(
            f"{at}: unknown field {unknown[0]!r}{hint}; an entry has public_key and roles"
        )
    if "public_key" not in entry or not entry["public_key"]:
        raise ConfigurationError(
            f"{at} has no public_key; add the key `duraguard keygen {name}` printed: {example}"
        )
    roles = entry.get("roles", ())
    if roles is None:
        roles = ()
    if isinstance(roles, str):
        raise ConfigurationError(
            f"{at}: roles must be a list, e.g. roles: [{roles}]; got the string {roles!r}"
        )
    if not isinstance(roles, list | tuple) or not all(isinstance(r, str) and r for r in roles):
        raise ConfigurationError(f"{at}: roles must be a list of names, e.g. roles: [manager]")
    try:
        key = load_public_key(entry["public_key"])
    except ConfigurationError as err:
        raise ConfigurationError(f"{at}: {err}") from None
    except Exception as err:
        raise ConfigurationError(
            f"{at}: the public_key cannot be read ({type(err).__name__}); give the base64 or PEM "
            "key `duraguard keygen` printed"
        ) from None
    return Approver(name, key, frozenset(roles))


def _unique_key_loader(path: Path) -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """A safe loader that refuses a name listed twice instead of keeping the last."""

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigurationError(
                    f"approvers file {path}: {key!r} is listed twice (line "
                    f"{key_node.start_mark.line + 1}); list each approver once, with one key, "
                    "and each of their fields once"
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
    )
    return sign(d, private_key) if private_key is not None else d


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
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    def no(why: str) -> ApprovalCheck:
        return ApprovalCheck(
            ok=False,
            reason=why,
            approver=decision.approver,
            call_id=call_id,
            decision=decision.decision,
            nonce=decision.nonce,
        )

    if decision.workflow_id != workflow_id or decision.call_id != call_id:
        return no(
            f"this decision is for {decision.workflow_id}/{decision.call_id}, not {workflow_id}/{call_id}"
        )
    if decision.run_id != run_id:
        return no(
            "this decision was made for another run of this workflow (a yes never carries over "
            "to a new run); decide the call that is waiting now"
        )
    if decision.challenge != challenge:
        return no("this decision answers another ask than the one waiting now; decide it again")
    try:
        bound = call_digest(tool, args)
    except NotJSON:
        return no("the call's arguments are not plain JSON, so no yes can be bound to them")
    if decision.call_digest != bound:
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
            nonce=decision.nonce,
        )
    if approver is None:
        return no(f"unknown approver {decision.approver!r}: no public key is registered for them")
    try:
        Ed25519PublicKey.from_public_bytes(approver.public_key).verify(
            base64.b64decode(decision.signature, validate=True), decision.statement()
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
        nonce=decision.nonce,
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
    query or from history), bound to it and signed when a key is given: what ``duraguard
    approve`` sends.

    Send it with ``await handle.execute_update(duraguard.DECIDE, d, result_type=ApprovalCheck)``
    (answered at once) or ``await handle.signal(duraguard.DECIDE, d)``.
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
    )
