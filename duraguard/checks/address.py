"""``address``: URLs and hosts that must not be reached: private, loopback, link-local, metadata.

A URL is read the way real clients read it: by the WHATWG URL standard (browsers, Node, most
newer clients), by Python's ``urllib.parse`` (``requests``, ``urllib``, ``aiohttp``) and by a
naive reader (host after the first ``@``, cut at whitespace or NUL, as older curl and C code
do), on the text as given and on its NFKC form; a target is refused where *any* reading reaches an
internal address, and refused where it cannot be parsed (fail closed). Every spelling of an
address counts: decimal (``2130706433``), octal (``0177.0.0.1``), hex (``0x7f000001``), short
forms (``127.1``), IPv6 and every IPv4-embedding IPv6 form, zone ids, full-width digits and
dots, percent escapes, userinfo tricks (``http://evil.com"@169.254.169.254/``), backslashes,
nested schemes (``jar:http://127.0.0.1!/``) and the metadata services of every major cloud by
address and by name. Only globally routable addresses pass, unless the deployment allows one by
name, pattern, IP or network.

With ``dns=True`` every name is also resolved (A and AAAA, off the event loop) and refused if
*any* answer is internal; the answers are recorded in the verdict, and a tool reads them with
:func:`pinned` to connect to exactly those addresses (DNS rebinding: see :mod:`._dns`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from typing import Any

from pydantic import Field

from .._deadline import spend
from .._types import Detection, Subject, Verdict
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from . import _dns
from ._dns import pinned as pinned
from ._hosts import METADATA_HOSTS as METADATA_HOSTS
from ._hosts import METADATA_IPS as METADATA_IPS
from ._hosts import PRIVATE_SUFFIXES as PRIVATE_SUFFIXES
from ._hosts import allowed
from ._hosts import ip_problem as ip_problem
from ._hosts import name_problem as name_problem
from ._hosts import parse_ip as parse_ip
from ._hosts import parse_ipv4 as parse_ipv4
from ._judgement import ALLOWED_SCHEMES as ALLOWED_SCHEMES
from ._judgement import MAX_URL as MAX_URL
from ._judgement import WRAPPERS as WRAPPERS
from ._judgement import Judgement as Judgement
from ._judgement import _readings
from ._judgement import address_allowed as address_allowed
from ._judgement import has_scheme as has_scheme
from ._judgement import judge as judge
from ._targets import HOST_KEYS, bare_host
from ._text import OFFLOAD_CHARS, Piece, normalise, pieces, pointer, text_size

_WRAP = "|".join(re.escape(w) for w in sorted(WRAPPERS, key=len, reverse=True))
# Where a URL may start in free text: ``anything://`` (also with backslashes; an empty or
# numeric scheme is kept so it is refused as unparsable), or a special scheme followed by
# anything (``http:127.0.0.1`` and ``https:/\\host`` reach a host for WHATWG), either after
# any chain of wrapping schemes (``jar:``, ``view-source:``).
_START = re.compile(
    rf"(?<![A-Za-z0-9+.\-])(?:(?:{_WRAP}):)*"
    r"(?:[A-Za-z0-9+.\-]*:[/\\]{2}|(?:https?|wss?|ftp):(?=[^\s\"'<>]))",
    re.IGNORECASE,
)
# Characters prose puts around a URL: a reader of the text stops there; a parser does not.
_QUOTES = re.compile(r"[\"'<>`]")
_TRAILING = ".,;:!?)]}>'\"*_~`"
_SPACE = re.compile(r"\s")
MAX_TARGETS = 256
"""The most URLs and hosts judged in one value; more refuse (deny, partial)."""
# A cut with nothing where the host should be: "http://", "https://...", "jar:http://".
_HOLLOW = re.compile(r"(?:[A-Za-z0-9+.\-]*:)+[/\\]*[.…]*")


def _parses(text: str) -> tuple[bool, bool]:
    """``(parses, failed only on a prose delimiter)`` for a URL found in free text."""
    _, failure = _readings(text)
    if failure is None:
        return True, False
    return False, any(f"character {c!r}" in failure for c in "<>[]^|")


def urls_in(text: str, *, limit: int | None = None) -> list[str]:
    """Every URL in free text, as many ways as a reader could cut it.

    A URL runs to the next whitespace (what a parser given the whole token reads), and also to
    the first quote or angle bracket, with trailing punctuation dropped (what a reader of prose
    reads). Each cut that parses is returned; a cut that fails is returned too (and so refused)
    unless the failure was only a prose delimiter in the host and either a shorter cut parses or
    the host starts with it (a placeholder: ``https://<your-host>/``). A cut with no host at all
    (``http://`` in a sentence about URLs, ``https://...``) reaches nothing and is left out.
    A cut is read to at most ``MAX_URL`` + 1 characters (a longer one is refused unread); at
    most ``limit`` + 1 URLs are returned.
    """
    if text.isascii() and ":" not in text:
        return []  # every URL start has a colon: most keys and words cost one scan
    norm = normalise(text).text if not text.isascii() else text
    spend(len(norm))
    found: list[str] = []
    for m in _START.finditer(norm):
        if limit is not None and len(found) > limit:
            break
        space = _SPACE.search(norm, m.start(), m.start() + MAX_URL + 1)
        whole = norm[m.start() : space.start() if space else m.start() + MAX_URL + 1]
        spend(len(whole))  # each cut is read by three parsers: bounded by MAX_URL
        quoted = _QUOTES.split(whole, maxsplit=1)[0]
        placeholder = _HOLLOW.fullmatch(quoted) is not None
        cuts = [
            c
            for c in dict.fromkeys(
                (whole, quoted, whole.rstrip(_TRAILING), quoted.rstrip(_TRAILING))
            )
            if c and not _HOLLOW.fullmatch(c)
        ]
        checked = [(c, *_parses(c)) for c in cuts]
        some_parse = any(ok for _, ok, _ in checked)
        for cut, ok, delimiter in checked:
            if ok or not delimiter or not (some_parse or placeholder):
                found.append(cut)
    return list(dict.fromkeys(found))


def targets(
    value: Any, *, keys: Iterable[str] = HOST_KEYS, limit: int = MAX_TARGETS
) -> list[tuple[str, str]]:
    """Every URL in a value's keys and strings, and every host named without a scheme (see
    :func:`._targets.bare_host`: strings and numbers under a host-like key, in lists too, and
    the host-like keys of a map under one), with its JSON Pointer: ``[(pointer, target), ...]``;
    at most ``limit`` + 1 of them (more than ``limit`` means the value carries too many to
    judge, and the guardrail refuses it)."""
    keys = tuple(keys)
    found: list[tuple[str, str]] = []
    items = [Piece((), value, False, value)] if isinstance(value, str) else pieces(value)
    for piece in items:
        if len(found) > limit:
            break
        if not piece.key and not isinstance(piece.value, str):
            if bare_host(piece, keys):  # a number a client formats into a URL: 2130706433
                found.append((pointer(piece.path), piece.text))
            continue
        stripped = piece.text.strip()
        urls = urls_in(piece.text, limit=limit - len(found))
        if stripped and _SPACE.search(stripped) is None:
            if (bare_host(piece, keys) and not urls) or (
                urls and _START.match(normalise(stripped).text)
            ):
                urls = [stripped, *(u for u in urls if u != stripped)]
        if urls:
            where = pointer(piece.path)
            found.extend((where, u) for u in urls)
    return found[: limit + 1]


class AddressSettings(Settings):
    """What ``address(...)`` was given: the allowed private addresses, whether to resolve names."""

    allow: tuple[str, ...] = ()
    dns: bool = False
    """Also resolve every name (A and AAAA) and refuse where any answer is internal."""
    resolver: str | None = None
    """The key in ``Resources.extra`` of a resolver ``(host) -> addresses`` (sync or async);
    ``None`` is the system resolver (``getaddrinfo``, off the event loop)."""
    max_names: int = Field(default=16, gt=0)
    """At most this many names are resolved per check; more refuse (bounded work)."""


class AddressGuardrail(Guardrail):
    """Refuses a value that carries a URL or host that must not be reached."""

    def __init__(self, settings: AddressSettings, resolver: _dns.Resolver | None) -> None:
        self.settings = settings
        self.resolver = resolver

    async def check(self, subject: Subject) -> Verdict:
        if text_size(subject.value, OFFLOAD_CHARS) >= OFFLOAD_CHARS:
            judged = await asyncio.to_thread(self._judge, subject.value)  # a big value: a thread
        else:
            judged = self._judge(subject.value)
        if len(judged) > MAX_TARGETS:
            return Verdict(
                action="deny",
                outcome="partial",
                reason=f"the value carries more than {MAX_TARGETS} URLs or hosts, too many to "
                "judge in one call; send fewer",
                detections=(Detection(rule="address.too-many"),),
                check="address",
            )
        refused = [(where, j) for where, j in judged if not j.ok]
        if refused:
            return Verdict.deny(
                f"{refused[0][1].reason}; use a public address, or ask the operator to allow this one",
                check="address",
                detections=tuple(Detection(rule="address.not-allowed", path=w) for w, _ in refused),
            )
        if self.resolver is None:
            return Verdict.allow()
        names: dict[str, str] = {}
        for where, j in judged:
            for name in sorted(j.names):
                names.setdefault(name, where)
        return await self._resolved(names, self.resolver) if names else Verdict.allow()

    def _judge(self, value: Any) -> list[tuple[str, Judgement]]:
        return [(where, judge(t, self.settings.allow)) for where, t in targets(value)]

    async def _resolved(self, names: dict[str, str], resolver: _dns.Resolver) -> Verdict:
        if len(names) > self.settings.max_names:
            return _unresolved(f"{len(names)} names to resolve, over the cap of "
                               f"{self.settings.max_names}", None)  # fmt: skip
        try:
            # Leave the engine's own timeout the last word; this one gives the clearer reason.
            answers = await _dns.resolve_all(names, resolver, timeout=self.timeout * 0.8)
        except _dns.ResolveError as err:
            return _unresolved(str(err), names.get(err.name))
        pins = tuple(
            Detection(rule=_dns.RESOLVED, detected=False, path=names[n], detail=_dns.pin_detail(n, ips))
            for n, ips in answers.items()
        )  # fmt: skip
        for name, ips in answers.items():
            for ip in ips:
                why = None if allowed(name, ip, self.settings.allow) else ip_problem(ip)
                if why:
                    return Verdict.deny(
                        f"{name!r} resolves to {why}; use a public address, or ask the operator "
                        "to allow this one",
                        check="address",
                        detections=(
                            *pins,
                            Detection(rule="address.not-allowed", path=names[name], detail=name),
                        ),
                    )
        return Verdict.allow(detections=pins)


def _unresolved(why: str, path: str | None) -> Verdict:
    return Verdict(
        action="deny",
        outcome="partial",
        reason=f"{why}; with DNS checking on, a name that cannot be resolved is refused",
        detections=(Detection(rule="address.dns-error", path=path),),
        check="address",
    )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    settings = AddressSettings(**spec.settings)
    resolver = _dns.resolver_from(resources.extra, settings.resolver) if settings.dns else None
    return AddressGuardrail(settings, resolver)


KIND = register_kind(
    Kind(
        "address", AddressSettings, _build, placements=("tool-args", "egress"), reads_session=False
    )
)


def address(
    *,
    allow: Iterable[str] = (),
    dns: bool = False,
    resolver: str | None = None,
    name: str | None = None,
    placements: Iterable[Any] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Refuse URLs and hosts that point at private, loopback, link-local or metadata addresses.

    Args:
        allow: Exceptions the deployment means to reach: host names, ``*.suffix``, IPs, CIDRs.
        dns: Also resolve each name and refuse if any A/AAAA answer is internal; the answers
            are recorded in the verdict (rule ``address.resolved``) and pinned for the call.
        resolver: The ``Resources.extra`` key of the resolver to use (tests, a DNS-over-HTTPS
            client); default the system resolver. A resolver that fails refuses.
    """
    return KIND.spec(
        name=name,
        placements=placements,
        timeout=timeout,
        allow=tuple(allow),
        dns=dns,
        resolver=resolver,
    )
