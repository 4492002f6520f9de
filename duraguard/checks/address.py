"""``address``: URLs and hosts that must not be reached: private, loopback, link-local, metadata.

Every spelling of an address is read the way a resolver would read it, without any DNS lookup:
decimal (``2130706433``), octal (``0177.0.0.1``), hex (``0x7f000001``), short forms (``127.1``),
IPv6, IPv4-mapped and other IPv4-embedding IPv6 forms, full-width digits and dots, percent
escapes, and cloud metadata host names. Only globally routable addresses pass, unless the
deployment allows one by name, pattern, IP or network.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from .._types import Detection, Subject, Verdict
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from ._text import leaves, pointer

METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal", "metadata.goog", "metadata", "instance-data",
        "instance-data.ec2.internal", "metadata.azure.com", "metadata.packet.net",
        "metadata.platformequinix.com", "kubernetes.default.svc", "kubernetes.default",
    }
)  # fmt: skip
"""Host names of cloud metadata services and cluster internals."""

PRIVATE_SUFFIXES = (
    ".internal",
    ".local",
    ".localhost",
    ".localdomain",
    ".home.arpa",
    ".lan",
    ".intranet",
    ".corp",
    ".svc",
    ".cluster.local",
)
# Wildcard DNS services that resolve a name to the IP written inside it.
_IP_IN_NAME = (".nip.io", ".sslip.io", ".xip.io", ".traefik.me", ".localtest.me", ".lvh.me")
_LOOPBACK_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "localtest.me",
        "lvh.me",
    }
)
ALLOWED_SCHEMES = frozenset({"http", "https", "ws", "wss"})
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s\"'<>]+")
_HOST_KEYS = (
    "url",
    "uri",
    "href",
    "link",
    "host",
    "hostname",
    "endpoint",
    "domain",
    "server",
    "ip",
    "address",
    "webhook",
    "callback",
)
_DOTS = str.maketrans({"。": ".", "．": ".", "｡": ".", "\u2024": "."})


def parse_ipv4(text: str) -> ipaddress.IPv4Address | None:
    """Read ``text`` as ``inet_aton`` does: 1 to 4 parts, each decimal, octal (``0``) or hex (``0x``)."""
    parts = text.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4:
        return None
    nums: list[int] = []
    for p in parts:
        try:
            if re.fullmatch(r"0[xX][0-9a-fA-F]*", p):
                n = int(p[2:] or "0", 16)
            elif re.fullmatch(r"0[0-7]+", p):
                n = int(p, 8)
            elif re.fullmatch(r"\d+", p):
                n = int(p, 10)
            else:
                return None
        except ValueError:
            return None
        nums.append(n)
    *head, last = nums
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    value = value * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(value)


def parse_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address in any spelling, or ``None`` where ``host`` is a name."""
    h = host.strip("[]")
    if ":" in h:
        try:
            return ipaddress.IPv6Address(h.split("%", 1)[0])
        except ValueError:
            return None
    return parse_ipv4(h)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    packed = ip.packed
    if (
        packed[:12] == b"\x00" * 12
        and packed[12:] != b"\x00\x00\x00\x00"
        and packed[12:] != b"\x00\x00\x00\x01"
    ):
        return ipaddress.IPv4Address(packed[12:])  # IPv4-compatible (::a.b.c.d), deprecated
    if ip in ipaddress.IPv6Network("64:ff9b::/96") or ip in ipaddress.IPv6Network("64:ff9b:1::/48"):
        return ipaddress.IPv4Address(packed[12:])  # NAT64
    return None


def _ip_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            why = _ip_problem(inner)
            return f"{why} (inside IPv6 {ip.compressed})" if why else None
        if ip == ipaddress.IPv6Address("fd00:ec2::254"):
            return "the cloud metadata service (fd00:ec2::254)"
    if str(ip) in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "168.63.129.16"):
        return f"the cloud metadata service ({ip})"
    if ip.is_loopback:
        return f"a loopback address ({ip})"
    if ip.is_link_local:
        return f"a link-local address ({ip})"
    if ip.is_unspecified:
        return f"the unspecified address ({ip})"
    if ip.is_multicast:
        return f"a multicast address ({ip})"
    if ip.is_private or not ip.is_global:
        return f"a private or reserved address ({ip})"
    return None


def _host_of(target: str) -> tuple[str | None, str | None]:
    """``(host, problem)`` for a URL or bare host."""
    text = unicodedata.normalize("NFKC", target.strip()).translate(_DOTS)
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = parts.hostname
            scheme = parts.scheme.lower()
        except ValueError:
            return None, "the URL cannot be parsed"
        if scheme not in ALLOWED_SCHEMES:
            return (
                None,
                f"the scheme {scheme}:// is not allowed (only {', '.join(sorted(ALLOWED_SCHEMES))})",
            )
        if host is None:
            # urlsplit refuses some hosts it cannot read; take what sits between // and the path
            raw = text.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
            host = raw.rsplit(":", 1)[0] if raw.count(":") == 1 else raw
        if not host:
            return None, "the URL names no host"
    else:
        host = text.split("/", 1)[0].rsplit("@", 1)[-1]
        if host.count(":") == 1:
            host = host.split(":", 1)[0]
    host = unquote(host).strip().lower().rstrip(".")
    host = unicodedata.normalize("NFKC", host).translate(_DOTS)
    return host, None


def _allowed(host: str, ip: Any, allow: Iterable[str]) -> bool:
    for entry in allow:
        e = entry.strip().lower().rstrip(".")
        if e.startswith("*."):
            if host.endswith(e[1:]) or host == e[2:]:
                return True
        elif "/" in e and ip is not None:
            try:
                if ip in ipaddress.ip_network(e, strict=False):
                    return True
            except ValueError:
                continue
        elif e == host or (ip is not None and parse_ip(e) == ip):
            return True
    return False


def address_allowed(url_or_host: str, allow: Iterable[str] = ()) -> tuple[bool, str]:
    """Whether a URL or host may be reached, and why not.

    Args:
        url_or_host: ``https://example.org/a``, ``example.org``, ``10.0.0.1:8080``, ``[::1]``.
        allow: Exceptions: host names, ``*.suffix`` patterns, IPs or CIDR networks.

    Returns:
        ``(True, "")`` where it may be reached, else ``(False, reason)``.
    """
    host, problem = _host_of(url_or_host)
    if host is None:
        return False, problem or "no host"
    allow = tuple(allow)
    ip = parse_ip(host)
    if _allowed(host, ip, allow):
        return True, ""
    if ip is not None:
        why = _ip_problem(ip)
        return (False, f"{url_or_host!r} points at {why}") if why else (True, "")
    if "%" in host or any(c.isspace() for c in host) or host.startswith("["):
        return False, f"{url_or_host!r} has a host that cannot be read ({host!r})"
    if host in METADATA_HOSTS:
        return False, f"{url_or_host!r} points at a cloud metadata host ({host})"
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return False, f"{url_or_host!r} points at this machine ({host})"
    if host.endswith(PRIVATE_SUFFIXES) or "." not in host:
        return (
            False,
            f"{url_or_host!r} names an internal host ({host}); allow it with allow=[{host!r}] if it is meant",
        )
    for suffix in _IP_IN_NAME:
        if host.endswith(suffix) or host == suffix[1:]:
            inner = host[: -len(suffix)]
            m = re.search(r"(\d{1,3}(?:[.-]\d{1,3}){3})$", inner) or re.search(
                r"([0-9a-f]{8})$", inner
            )
            embedded = (
                parse_ip(m.group(1).replace("-", ".")) if m and not m.group(1).isalnum() else None
            )
            if m and embedded is None and re.fullmatch(r"[0-9a-f]{8}", m.group(1)):
                embedded = ipaddress.IPv4Address(int(m.group(1), 16))
            if embedded is None or _ip_problem(embedded):
                return False, f"{url_or_host!r} resolves to an address written in its name ({host})"
    return True, ""


def targets(value: Any, *, keys: Iterable[str] = _HOST_KEYS) -> list[tuple[str, str]]:
    """Every URL in a value's strings, and every string held under a host-like key, with its
    JSON Pointer: ``[(pointer, target), ...]``."""
    found: list[tuple[str, str]] = []
    keys = tuple(keys)
    if isinstance(value, str):
        urls = _URL.findall(value)
        return [("#", u) for u in urls] or (
            [("#", value.strip())] if value.strip() and " " not in value.strip() else []
        )
    for path, leaf in leaves(value):
        if not isinstance(leaf, str):
            continue
        where = pointer(path)
        urls = _URL.findall(leaf)
        found.extend((where, u) for u in urls)
        last = str(path[-1]).lower() if path else ""
        if (
            not urls
            and last
            and any(last == k or last.endswith("_" + k) for k in keys)
            and leaf.strip()
            and " " not in leaf.strip()
        ):
            found.append((where, leaf.strip()))
    return found


class AddressSettings(Settings):
    allow: tuple[str, ...] = ()


class AddressGuardrail(Guardrail):
    """Refuses a value that carries a URL or host that must not be reached."""

    def __init__(self, settings: AddressSettings) -> None:
        self.settings = settings

    async def check(self, subject: Subject) -> Verdict:
        refused = [
            (where, t, why)
            for where, t in targets(subject.value)
            for ok, why in [address_allowed(t, self.settings.allow)]
            if not ok
        ]
        if not refused:
            return Verdict.allow()
        _, _, why = refused[0]
        return Verdict.deny(
            f"{why}; use a public address, or ask the operator to allow this one",
            check="address",
            detections=tuple(Detection(rule="address.not-allowed", path=w) for w, _, _ in refused),
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return AddressGuardrail(AddressSettings(**spec.settings))


KIND = register_kind(
    Kind(
        "address", AddressSettings, _build, placements=("tool-args", "egress"), reads_session=False
    )
)


def address(
    *,
    allow: Iterable[str] = (),
    name: str | None = None,
    placements: Iterable[Any] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Refuse URLs and hosts that point at private, loopback, link-local or metadata addresses.

    Args:
        allow: Exceptions the deployment means to reach: host names, ``*.suffix``, IPs, CIDRs.
    """
    return KIND.spec(name=name, placements=placements, timeout=timeout, allow=tuple(allow))
