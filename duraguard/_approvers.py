"""Who may say yes: approvers, their Ed25519 public keys and roles, read from a file people write.

Everything here is read from outside, so every mistake in the approvers file is refused with
the file, the entry and the fix named (a role given as a string, a misspelt field, a missing
key, YAML that does not parse, a name listed twice).

The file is read live (:meth:`ApproverKeys.from_file`): a person removed from it, or a role
taken from them, no longer counts from the next decision checked, for asks already parked too,
on every worker, without a restart. A file that stops reading (half written, a typo) counts
nobody's yes until it is fixed: a revocation is never undone by a mistake in the file.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigurationError

log = logging.getLogger("duraguard")

SETTLE_SECONDS = 2.0
"""A file changed this recently is read again on every use: a change within the same tick of
the file system's clock, and of the same size, would not show in its metadata."""


def fingerprint(name: str, public_key: bytes) -> str:
    """64 bits of SHA-256 over an approver's name and raw public key: what an ask with more
    people than it records keys for records of each (a decision then carries its key)."""
    return hashlib.sha256(name.encode() + b"\0" + public_key).hexdigest()[:16]


@dataclass(frozen=True)
class Approver:
    """Someone whose yes counts: a name, an Ed25519 public key, and roles."""

    name: str
    public_key: bytes
    """Raw 32-byte Ed25519 public key."""
    roles: frozenset[str] = field(default_factory=frozenset)


def _by_name(approvers: Iterable[Approver]) -> dict[str, Approver]:
    out: dict[str, Approver] = {}
    for a in approvers:
        if a.name in out:
            raise ConfigurationError(
                f"approver {a.name!r} is listed twice; give each person one key"
            )
        if len(a.public_key) != 32:
            raise ConfigurationError(
                f"approver {a.name!r}: an Ed25519 public key is 32 bytes; got {len(a.public_key)}"
            )
        out[a.name] = a
    return out


class ApproverKeys:
    """The approvers a worker trusts, by name; read live from a file (:meth:`from_file`)."""

    def __init__(self, approvers: Iterable[Approver] = ()) -> None:
        self._named = _by_name(approvers)
        self._path: Path | None = None
        self._stamp: tuple[int, ...] = ()
        self._text: bytes | None = None
        self._problem: str | None = None

    @property
    def problem(self) -> str | None:
        """Why the file no longer reads (nobody's yes counts until it does); ``None`` when it
        does, or for keys given in code."""
        if self._path is not None:
            self._refresh()
        return self._problem

    @property
    def _by_name(self) -> dict[str, Approver]:
        if self._path is not None:
            self._refresh()
        return self._named

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[Approver]:
        return iter(list(self._by_name.values()))

    def get(self, name: str) -> Approver | None:
        return self._by_name.get(name)

    def roles(self) -> frozenset[str]:
        """Every role some registered approver holds."""
        return frozenset(r for a in self._by_name.values() for r in a.roles)

    def _refresh(self) -> None:
        """Read the file again where it changed (its metadata, or its bytes while it is new)."""
        assert self._path is not None
        try:
            st = os.stat(self._path)
        except OSError as err:
            self._broken(f"approvers file {self._path} cannot be read ({err.strerror})")
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        settled = time.time() - st.st_mtime > SETTLE_SECONDS
        if stamp == self._stamp and settled:
            return
        try:
            text = self._path.read_bytes()
        except OSError as err:
            self._broken(f"approvers file {self._path} cannot be read ({err.strerror})")
            return
        self._stamp = stamp
        if text == self._text:
            return
        self._text = text
        try:
            self._named = _by_name(_load(self._path, text.decode("utf-8", "replace")))
        except ConfigurationError as err:
            self._broken(str(err))
            return
        if self._problem is not None:
            log.warning("duraguard: approvers file %s reads again", self._path)
        self._problem = None

    def _broken(self, why: str) -> None:
        said = f"{why}; nobody's yes counts until it is fixed"
        if self._problem != said:
            log.error("duraguard: %s", said)
        self._problem = said
        self._named = {}
        self._stamp, self._text = (), None

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
        """From a YAML or JSON file of the :meth:`from_mapping` shape, read live: checked now
        (a file that does not read is refused, naming the fix), then read again whenever it
        changes.

        Raises:
            ConfigurationError: the file does not exist or does not read.
        """
        p = Path(path)
        try:
            text = p.read_bytes()
        except FileNotFoundError:
            raise ConfigurationError(
                f"approvers file {p} does not exist; make keys with `duraguard keygen NAME`"
            ) from None
        keys = cls(_load(p, text.decode("utf-8", "replace")))
        keys._path, keys._text = p, text
        st = p.stat()
        keys._stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        return keys


def _load(p: Path, text: str) -> list[Approver]:
    """The approvers in a file's text, or an error naming the file, the entry and the fix."""
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader(p))
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
            f"approvers file {p} is empty; add the entry `duraguard keygen NAME` prints for each person"
        )
    return list(ApproverKeys.from_mapping(data, where=f"approvers file {p}"))


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
