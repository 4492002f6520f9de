"""How :mod:`duraguard.checks.address` judges one target: every reading a client may make of it.

A URL, or a bare host such as ``10.0.0.1:8080``, is read by the WHATWG URL standard, by
Python's ``urllib.parse`` and by a naive reader, on the text as given and on its NFKC form
(:func:`_readings`); :func:`judge` refuses it where any reading reaches an internal address,
names a scheme other than http(s) and ws(s), or cannot be parsed. :func:`address_allowed` is the
public form. Finding the targets in a value, and the guardrail itself, stay in ``address``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from .._deadline import spend
from ._hosts import LOOPBACK_NAMES, METADATA_HOSTS, allowed, ip_problem, name_problem, parse_ip
from ._text import normalise
from ._url import SPECIAL, Host, URLError, naive, python, whatwg

ALLOWED_SCHEMES = frozenset({"http", "https", "ws", "wss"})
# Schemes that wrap another URL: what they load is the inner URL (``jar:`` up to its ``!``).
WRAPPERS = frozenset(
    {"jar", "view-source", "feed", "pcast", "itpc", "podcast", "url", "blob", "filesystem",
     "wyciwyg", "netdoc", "webcal", "git+http", "git+https", "ghttp"}
)  # fmt: skip
_DOTS = str.maketrans({"。": ".", "．": ".", "｡": ".", "\u2024": "."})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
MAX_URL = 8192
"""The longest URL read; a longer one is refused unread (its host could sit past any window)."""


@dataclass
class Judgement:
    """What reading one target found: why it is refused, or the names DNS mode must resolve."""

    target: str
    why: str = ""
    """What is wrong, after the target: ``points at a loopback address (127.0.0.1)``."""
    names: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.why

    @property
    def reason(self) -> str:
        shown = self.target if len(self.target) <= 200 else self.target[:200] + "..."
        return f"{shown!r} {self.why}" if self.why else ""


_UNPARSABLE = "cannot be parsed ({}); a URL that cannot be read is refused"
_SCHEMES = ", ".join(sorted(ALLOWED_SCHEMES))


def _python_hosts(name: str) -> Iterator[str]:
    """The hosts a Python client may end up at for ``urlsplit``'s hostname: as given, with a
    zone id split off before any decoding, percent-decoded, and cut at a NUL as C code does."""
    yield name
    if "%" in name and ":" in name:
        yield name.split("%", 1)[0]
    elif "%" in name:
        yield unquote(name)
    if "\x00" in name:
        yield name.split("\x00", 1)[0]


def has_scheme(text: str) -> bool:
    """Whether ``text`` is a URL with a scheme (``https://x``, ``http:x``, ``jar:http://x``)
    rather than a bare host (``localhost:8080``, ``10.0.0.1:80``)."""
    m = _SCHEME.match(text)
    if m is None:
        return False
    scheme = m.group(1).lower()
    return scheme in SPECIAL or scheme in WRAPPERS or text[m.end() : m.end() + 1] in ("/", "\\")


@lru_cache(maxsize=1024)
def _readings(text: str) -> tuple[tuple[Host, ...], str | None]:
    """Every parser's reading of ``text`` (as given and NFKC), and the failure that refuses.

    Cached: the finder parses each cut of free text, and the judge reads the same cut again."""
    readings: list[Host] = []
    failure: str | None = None
    norm = normalise(text).text.translate(_DOTS)
    for candidate in dict.fromkeys((text, norm)):
        for parse in (whatwg, python):
            try:
                readings.append(parse(candidate))
            except URLError as err:
                if candidate is text and failure is None:
                    failure = str(err)
        lenient = naive(candidate)
        # A naive reading counts where it lands on an address or a well-known internal name:
        # "user:p@ss@host" is a password with an @ far more often than an attack on host "ss".
        if lenient is not None and lenient.scheme in ALLOWED_SCHEMES:
            name = lenient.name.rstrip(".")
            if parse_ip(name) is not None or name in METADATA_HOSTS or name in LOOPBACK_NAMES:
                readings.append(lenient)
    return tuple(readings), failure


def judge(target: str, allow: Iterable[str] = ()) -> Judgement:
    """Read ``target`` (a URL, or a bare host such as ``10.0.0.1:8080``) every way a client may."""
    allow = tuple(allow)
    out = Judgement(target)
    text = target.strip()
    spend(min(len(text), MAX_URL))
    if len(text) > MAX_URL:
        # A host could sit past any window read; a client would still find it: refuse unread.
        out.why = _UNPARSABLE.format(f"it is longer than {MAX_URL} characters")
        return out
    if not has_scheme(text):
        if re.match(r"[^/\\]*:[/\\]{2}", text):
            out.why = _UNPARSABLE.format("what stands before :// is not a scheme")
            return out
        text = "http:" + text if text.startswith(("//", "\\\\")) else "http://" + text
    readings, failure = _readings(text)
    if failure is not None:
        out.why = _UNPARSABLE.format(failure)
        return out
    for host in readings:
        why = _host_problem(host, allow, out)
        if why:
            out.why = why
            return out
    return out


def _host_problem(host: Host, allow: tuple[str, ...], out: Judgement) -> str | None:
    if host.kind == "none":
        if host.scheme in SPECIAL:
            return None  # Python reads no host in "http:x"; the WHATWG reading decides
        inner = host.rest.split("!", 1)[0] if host.scheme == "jar" else host.rest
        if host.scheme in WRAPPERS and has_scheme(inner):
            nested = judge(inner, allow)
            if not nested.ok:
                return f"{nested.why} (inside {host.scheme}:)"
        return f"uses the {host.scheme}: scheme; only {_SCHEMES} URLs may be reached"
    if host.scheme not in ALLOWED_SCHEMES:
        return f"uses the {host.scheme}: scheme; only {_SCHEMES} URLs may be reached"
    if host.kind in ("empty", "opaque"):
        return "names no host that can be reached"
    if host.ip is not None:
        if allowed(str(host.ip), host.ip, allow):
            return None
        why = ip_problem(host.ip)
        return f"points at {why}" if why else None
    for name in _python_hosts(host.name):
        ip = parse_ip(name)
        bare = name.lower().rstrip(".")
        if allowed(bare, ip, allow):
            continue
        why = ip_problem(ip) if ip is not None else name_problem(bare)
        if why:
            return f"points at {why}"
        if ip is None:
            out.names.add(bare)
    return None


def address_allowed(url_or_host: str, allow: Iterable[str] = ()) -> tuple[bool, str]:
    """Whether a URL or host may be reached, and why not.

    Args:
        url_or_host: ``https://example.org/a``, ``example.org``, ``10.0.0.1:8080``, ``[::1]``.
        allow: Exceptions: host names, ``*.suffix`` patterns, IPs or CIDR networks.

    Returns:
        ``(True, "")`` where every reading of it is public, else ``(False, reason)``.
    """
    found = judge(url_or_host, allow)
    return found.ok, found.reason


__all__: list[str] = [
    "ALLOWED_SCHEMES",
    "MAX_URL",
    "WRAPPERS",
    "Judgement",
    "_readings",
    "address_allowed",
    "has_scheme",
    "judge",
]
