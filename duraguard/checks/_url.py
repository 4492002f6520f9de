"""Where a URL really goes: its host as the WHATWG URL standard reads it (browsers, Node, undici,
most HTTP clients written since) and as Python's ``urllib.parse`` reads it (``urllib``,
``requests``/``urllib3``, ``aiohttp``), side by side, with no network.

The two disagree on purpose-built inputs (``http://127.0.0.1\\@evil.com/`` goes inside for
WHATWG and outside for Python), which is why :mod:`duraguard.checks.address` judges both. Only
the parts that decide the host are implemented: the scheme, the authority (userinfo split at the
last ``@``, backslashes as slashes for special schemes, tabs and newlines removed), the port's
syntax, and the host parser (percent-decoding, IDNA/UTS #46 mapping, forbidden code points,
IPv4 numbers in every radix, IPv6).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote_to_bytes, urlsplit

import idna

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
HostKind = Literal["domain", "ipv4", "ipv6", "opaque", "empty", "none"]
SPECIAL = frozenset({"http", "https", "ws", "wss", "ftp", "file"})

_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/:<>?@[\\]^|")
_FORBIDDEN_DOMAIN = _FORBIDDEN_HOST | frozenset(chr(i) for i in range(0x20)) | {"%", "\x7f"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")


class URLError(ValueError):
    """The URL cannot be parsed; ``str()`` says why."""


@dataclass(frozen=True, slots=True)
class Host:
    """A URL's host as one parser reads it."""

    scheme: str
    kind: HostKind
    """``domain`` (ASCII, lower case), ``ipv4``/``ipv6`` (see :attr:`ip`), ``opaque`` (a
    non-special scheme's host, never an IP), ``empty``, or ``none`` (no authority at all)."""
    name: str = ""
    ip: IP | None = None
    rest: str = ""
    """What follows ``scheme:`` where there is no authority (``jar:http://...``'s inner URL)."""


# -- WHATWG -------------------------------------------------------------------------------------


def ipv4_number(part: str) -> int | None:
    """The WHATWG IPv4 number parser: decimal, ``0x`` hex or ``0`` octal; ``None`` on failure."""
    if not part:
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        radix, part = 16, part[2:]
    elif len(part) > 1 and part[0] == "0":
        radix, part = 8, part[1:]
    if not part:
        return 0
    digits = {10: "0123456789", 8: "01234567", 16: "0123456789abcdefABCDEF"}[radix]
    if any(c not in digits for c in part):
        return None
    return int(part, radix)


def _ends_in_number(domain: str) -> bool:
    parts = domain.split(".")
    if parts[-1] == "":
        if len(parts) == 1:
            return False
        parts.pop()
    last = parts[-1]
    return (last != "" and last.isascii() and last.isdigit()) or ipv4_number(last) is not None


def whatwg_ipv4(domain: str) -> ipaddress.IPv4Address:
    """The WHATWG IPv4 parser (1 to 4 parts, each in any radix; the last fills what is left)."""
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise URLError(f"{domain!r} ends in a number but has {len(parts)} parts (at most 4)")
    numbers: list[int] = []
    for part in parts:
        n = ipv4_number(part)
        if n is None:
            raise URLError(f"{domain!r} ends in a number but {part!r} is not an IPv4 number")
        numbers.append(n)
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise URLError(f"{domain!r} ends in a number but is not a valid IPv4 address")
    value = last
    for i, n in enumerate(head):
        value += n * 256 ** (3 - i)
    return ipaddress.IPv4Address(value)


_MAX_LABEL = 63
_MAX_NAME = 253
"""A DNS name holds labels of at most 63 characters, 253 in all: a longer international host
reaches no one by name, and is refused before punycode (whose cost grows with the square of a
label's length) is spent on it."""


def _too_long(domain: str) -> URLError:
    return URLError(
        f"the host {domain[:80]!r} is longer than a DNS name can be ({_MAX_LABEL} characters "
        f"a label, {_MAX_NAME} in all), so no client reaches it by name"
    )


def _domain_to_ascii(domain: str) -> str:
    if domain.isascii():
        ascii_domain = domain.lower()
    else:
        try:
            mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
        except (idna.IDNAError, ValueError) as err:
            raise URLError(
                f"the host {domain[:80]!r} is not a valid international name ({err})"
            ) from None
        parts = mapped.split(".")
        if len(mapped.rstrip(".")) > _MAX_NAME or any(len(p) > _MAX_LABEL for p in parts):
            raise _too_long(domain)
        labels = [
            label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
            for label in parts
        ]
        ascii_domain = ".".join(labels)
    for label in ascii_domain.split("."):
        if label.startswith("xn--"):
            if len(label) > _MAX_LABEL:
                raise _too_long(domain)
            try:
                label[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                raise URLError(f"the host label {label[:80]!r} is not valid punycode") from None
    if not ascii_domain:
        raise URLError("the host is empty after IDNA mapping")
    return ascii_domain


def whatwg_host(text: str, *, special: bool) -> tuple[HostKind, str, IP | None]:
    """The WHATWG host parser: ``(kind, serialised name, ip)``; raises :class:`URLError`."""
    if text.startswith("["):
        if not text.endswith("]"):
            raise URLError(f"the IPv6 host {text!r} has no closing ]")
        inner = text[1:-1]
        if "%" in inner:
            raise URLError(f"the IPv6 host {text!r} carries a zone id, which URLs do not allow")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise URLError(f"{text!r} is not a valid IPv6 address") from None
        return "ipv6", f"[{v6.compressed}]", v6
    if not special:
        bad = sorted(set(text) & (_FORBIDDEN_HOST - {"%"}))
        if bad:
            raise URLError(f"the host {text!r} contains a forbidden character {bad[0]!r}")
        return ("opaque" if text else "empty"), text, None
    domain = unquote_to_bytes(text).decode("utf-8", errors="replace")
    ascii_domain = _domain_to_ascii(domain)
    bad = sorted(set(ascii_domain) & _FORBIDDEN_DOMAIN)
    if bad:
        raise URLError(f"the host {ascii_domain!r} contains a forbidden character {bad[0]!r}")
    if _ends_in_number(ascii_domain):
        v4 = whatwg_ipv4(ascii_domain)
        return "ipv4", str(v4), v4
    return "domain", ascii_domain, None


def whatwg(url: str) -> Host:
    """The host of ``url`` as the WHATWG URL standard reads it (no base URL)."""
    text = url.strip(_C0_OR_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    m = _SCHEME.match(text)
    if m is None or text[m.end() : m.end() + 1] != ":":
        raise URLError(f"{url[:80]!r} does not start with a scheme (such as https:)")
    scheme = m.group(0).lower()
    rest = text[m.end() + 1 :]
    special = scheme in SPECIAL
    if special:
        authority = rest.lstrip("/\\")
        ends = "/\\?#"
    elif rest.startswith("//"):
        authority = rest[2:]
        ends = "/?#"
    else:
        return Host(scheme, "none", rest=rest)
    end = next((i for i, c in enumerate(authority) if c in ends), len(authority))
    authority = authority[:end]
    _userinfo, at, hostport = authority.rpartition("@")
    if at and not hostport:
        raise URLError(f"{url[:80]!r} has credentials but no host")
    host, port = _split_port(hostport, url)
    if port and (not port.isascii() or not port.isdigit() or int(port) > 65535):
        raise URLError(f"{url[:80]!r} has an invalid port {port!r}")
    if special and not host and scheme != "file":
        raise URLError(f"{url[:80]!r} names no host")
    kind, name, ip = whatwg_host(host, special=special)
    return Host(scheme, kind, name, ip)


def _split_port(hostport: str, url: str) -> tuple[str, str]:
    inside = False
    for i, c in enumerate(hostport):
        if c == "[":
            inside = True
        elif c == "]":
            inside = False
        elif c == ":" and not inside:
            if i == 0:
                raise URLError(f"{url[:80]!r} has a port but no host")
            return hostport[:i], hostport[i + 1 :]
    return hostport, ""


# -- Python's urllib.parse ----------------------------------------------------------------------


def python(url: str) -> Host:
    """The host of ``url`` as ``urllib.parse.urlsplit`` reads it (what ``requests`` connects to)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as err:
        raise URLError(f"{url[:80]!r} cannot be parsed ({err})") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise URLError(f"{url[:80]!r} does not start with a scheme (such as https:)")
    if not parts.netloc:
        return Host(scheme, "none", rest=url.split(":", 1)[1] if ":" in url else "")
    if not hostname:
        return Host(scheme, "empty")
    return Host(scheme, "domain", hostname)


# -- a naive reader -----------------------------------------------------------------------------

_NAIVE_END = re.compile(r"[:/?#\\@\s\x00]")


def naive(url: str) -> Host | None:
    """The host a naive parser reads (older curl, hand-written splitters, C code): after the
    *first* ``@`` and up to the first ``:``, ``@``, slash, whitespace or NUL. ``None`` where
    there is no authority or nothing to cut."""
    m = _SCHEME.match(url)
    if m is None or url[m.end() : m.end() + 1] != ":":
        return None
    rest = url[m.end() + 1 :]
    if not rest.startswith(("//", "\\\\", "/\\", "\\/")):
        return None
    authority = re.split(r"[/?#\\]", rest.lstrip("/\\"), maxsplit=1)[0]
    _, _, after = authority.partition("@")
    after = after or authority
    if after.startswith("["):
        name = after.split("]", 1)[0] + "]" if "]" in after else ""
    else:
        name = _NAIVE_END.split(after, maxsplit=1)[0]
    return Host(m.group(0).lower(), "domain", name.lower()) if name else None
