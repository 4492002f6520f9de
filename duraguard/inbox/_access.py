"""Who may use the inbox, and how far: people, their rights, sessions, CSRF and hosts.

Three rights, each including the one before it:

* ``see``: the list of what waits (workflow, tool, who asked, role, time left), no values;
* ``read``: also the arguments and every reason (decoded through the codec);
* ``decide``: also preview edits and post a signed decision, in their own name only.

Without an access file the inbox is *open*: it must be bound to loopback, everyone who can
reach it decides, and the Host header must name a loopback address (so a web page on another
site cannot reach it by DNS rebinding). With one, a person signs in with a token (a browser
gets an HttpOnly, SameSite=Strict session cookie; a program sends ``Authorization: Bearer``),
or a reverse proxy that authenticated them names them in a header the inbox trusts only from
the proxy's own addresses.

Every POST must be JSON, come from the page's own origin when a browser sends it, and, unless
it carries a bearer token, carry the CSRF token that ``GET /api/me`` hands out.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigurationError

Right = Literal["see", "read", "decide"]
RIGHTS: tuple[Right, ...] = ("see", "read", "decide")
SESSION_COOKIE = "dg_inbox"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Person:
    """Who is asking, and what they may do.

    Attributes:
        name: the person's name; a decision they post must carry it as its approver (except in
            the open inbox, where nobody is named).
        right: ``see``, ``read`` or ``decide``.
        via: how they were recognised: ``open``, ``bearer``, ``session`` or ``proxy``.
        session: the session cookie's value, for the CSRF token bound to it.
    """

    name: str | None
    right: Right
    via: Literal["open", "bearer", "session", "proxy"]
    session: str = ""

    def may(self, right: Right) -> bool:
        """Whether this person holds ``right`` (``decide`` holds ``read`` holds ``see``)."""
        return RIGHTS.index(self.right) >= RIGHTS.index(right)


@dataclass(frozen=True)
class Member:
    """One person of the access file."""

    name: str
    right: Right
    token_sha256: str | None = None


@dataclass(frozen=True)
class Proxy:
    """A reverse proxy that authenticates people and names them in ``header``."""

    header: str
    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    def trusts(self, peer: str | None) -> bool:
        if not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in net for net in self.trusted)


def token_digest(token: str) -> str:
    """What the access file keeps of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


SECRET_ENV = "DURAGUARD_INBOX_SECRET"


def shared_secret(environ: Mapping[str, str] | None = None) -> bytes:
    """The key of sessions and CSRF tokens: ``DURAGUARD_INBOX_SECRET`` (the same on every
    instance of one inbox), else a random one of this process's own.

    Raises:
        ConfigurationError: a secret shorter than 32 characters.
    """
    raw = (os.environ if environ is None else environ).get(SECRET_ENV, "")
    if not raw:
        return secrets.token_bytes(32)
    if len(raw) < 32:
        raise ConfigurationError(
            f"{SECRET_ENV} is {len(raw)} characters; it needs 32 or more (make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), the same on "
            "every inbox instance"
        )
    return hashlib.sha256(f"duraguard.inbox|{raw}".encode()).digest()


@dataclass
class Access:
    """The inbox's access rules; :meth:`open` without an access file.

    Args:
        members: the people, by name.
        proxy: a trusted reverse proxy, if any.
        secret: the key of session cookies and CSRF tokens: from ``DURAGUARD_INBOX_SECRET``
            where it is set (several inbox instances behind one address then accept each
            other's sessions), else random (sessions end when the inbox restarts).
    """

    members: Mapping[str, Member] = field(default_factory=dict)
    proxy: Proxy | None = None
    secret: bytes = field(default_factory=lambda: shared_secret())

    @classmethod
    def open(cls) -> Access:
        """Everyone who reaches the inbox decides: for a loopback bind only."""
        return cls()

    @property
    def is_open(self) -> bool:
        return not self.members and self.proxy is None

    @classmethod
    def from_file(cls, path: str | Path) -> Access:
        """Read an access file (YAML or JSON)::

            people:
              alice: {token_sha256: <hex>, rights: decide}
              rita: {token_sha256: <hex>, rights: see}
            proxy:                     # optional: a reverse proxy that signs people in
              header: X-Forwarded-User
              trusted: [127.0.0.1]     # the proxy's own addresses

        Raises:
            ConfigurationError: a file that cannot be read, or an entry that is wrong, naming
                the entry and the fix.
        """
        import yaml

        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text())
        except FileNotFoundError:
            raise ConfigurationError(
                f"access file {p} does not exist; make an entry with "
                "`duraguard inbox --new-token NAME --rights decide`"
            ) from None
        except yaml.YAMLError as err:
            raise ConfigurationError(f"access file {p} is not valid YAML: {err}") from None
        return cls.from_mapping(data, where=f"access file {p}")

    @classmethod
    def from_mapping(cls, data: Any, *, where: str = "access") -> Access:
        """The :meth:`from_file` shape, from a mapping."""
        if not isinstance(data, Mapping) or not (data.get("people") or data.get("proxy")):
            raise ConfigurationError(
                f"{where} needs 'people:' (name: {{token_sha256: ..., rights: decide}}) "
                "and/or 'proxy:' ({header: X-Forwarded-User, trusted: [127.0.0.1]})"
            )
        unknown = set(data) - {"people", "proxy"}
        if unknown:
            raise ConfigurationError(
                f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: people, proxy"
            )
        people = data.get("people") or {}
        if not isinstance(people, Mapping):
            raise ConfigurationError(f"{where}: 'people' must map names to entries")
        members = {str(n): _member(str(n), e, where) for n, e in people.items()}
        proxy = _proxy(data["proxy"], where) if data.get("proxy") else None
        return cls(members=members, proxy=proxy)

    # -- who is asking ------------------------------------------------------------------
    def bearer(self, token: str) -> Person | None:
        """The person a bearer token belongs to, or None."""
        wanted = token_digest(token)
        for m in self.members.values():
            if m.token_sha256 and hmac.compare_digest(m.token_sha256, wanted):
                return Person(m.name, m.right, "bearer")
        return None

    def identify(
        self,
        *,
        authorization: str | None,
        cookie: str | None,
        headers: Mapping[str, str],
        peer: str | None,
    ) -> Person | None:
        """The person making a request, or None (sign in first)."""
        if self.is_open:
            return Person(None, "decide", "open")
        if authorization and authorization.lower().startswith("bearer "):
            return self.bearer(authorization[7:].strip())
        if self.proxy is not None and self.proxy.trusts(peer):
            named = (headers.get(self.proxy.header.lower()) or "").strip()
            m = self.members.get(named)
            if m is not None:
                return Person(m.name, m.right, "proxy")
        if cookie:
            return self.session_person(cookie)
        return None

    def session_cookie(self, person: Person, now: float | None = None) -> str:
        """A session cookie value for ``person``: ``name.expiry.mac``."""
        expires = int((time.time() if now is None else now) + SESSION_SECONDS)
        body = f"{person.name}.{expires}"
        return f"{body}.{self._mac('session', body)}"

    def session_person(self, cookie: str, now: float | None = None) -> Person | None:
        body, _, mac = cookie.rpartition(".")
        name, _, expires = body.rpartition(".")
        if (
            not name
            or not expires.isdigit()
            or not hmac.compare_digest(mac, self._mac("session", body))
        ):
            return None
        if int(expires) < (time.time() if now is None else now):
            return None
        m = self.members.get(name)
        return Person(m.name, m.right, "session", session=cookie) if m is not None else None

    # -- CSRF ---------------------------------------------------------------------------
    def csrf_token(self, person: Person) -> str:
        """The token a page sends with its posts: bound to the person's session."""
        return self._mac("csrf", f"{person.via}|{person.name or ''}|{person.session}")

    def csrf_ok(self, person: Person, sent: str | None) -> bool:
        if person.via == "bearer":
            return True  # not ambient: a browser never attaches it to another site's request
        return bool(sent) and hmac.compare_digest(sent or "", self.csrf_token(person))

    def _mac(self, purpose: str, body: str) -> str:
        return hmac.new(self.secret, f"{purpose}|{body}".encode(), hashlib.sha256).hexdigest()


def _member(name: str, entry: Any, where: str) -> Member:
    at = f"{where}, person {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"{at}: write {{token_sha256: <hex>, rights: decide}}")
    unknown = set(entry) - {"token", "token_sha256", "rights"}
    if unknown:
        raise ConfigurationError(
            f"{at}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: token_sha256, token, rights"
        )
    right = entry.get("rights", "see")
    if right not in RIGHTS:
        raise ConfigurationError(f"{at}: rights {right!r} is not one of {', '.join(RIGHTS)}")
    digest = entry.get("token_sha256")
    if digest is None and entry.get("token") is not None:
        token = str(entry["token"])
        if len(token) < 16:
            raise ConfigurationError(f"{at}: a token is at least 16 characters")
        digest = token_digest(token)
    if digest is not None and (
        not isinstance(digest, str) or len(digest) != 64 or set(digest) - set("0123456789abcdef")
    ):
        raise ConfigurationError(f"{at}: token_sha256 must be 64 lowercase hex digits")
    return Member(name=name, right=right, token_sha256=digest)


def _proxy(entry: Any, where: str) -> Proxy:
    at = f"{where}, proxy"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("header"), str):
        raise ConfigurationError(f"{at}: write {{header: X-Forwarded-User, trusted: [127.0.0.1]}}")
    trusted = entry.get("trusted", ["127.0.0.1", "::1"])
    if isinstance(trusted, str):
        trusted = [trusted]
    nets = []
    for t in trusted if isinstance(trusted, Iterable) else ():
        try:
            nets.append(ipaddress.ip_network(str(t), strict=False))
        except ValueError:
            raise ConfigurationError(
                f"{at}: trusted {t!r} is not an address or network (e.g. 10.0.0.5, 10.0.0.0/24)"
            ) from None
    if not nets:
        raise ConfigurationError(f"{at}: trusted must list the proxy's own addresses")
    return Proxy(header=entry["header"], trusted=tuple(nets))
