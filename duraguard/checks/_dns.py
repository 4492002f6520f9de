"""DNS mode for ``address``: resolve names off the event loop, and pin the answers for the call.

Why pin: a name judged public at check time can answer differently when the tool connects a
moment later (DNS rebinding: a short TTL, a public answer for the check, ``127.0.0.1`` for the
tool). So the check records every address it judged in its verdict (rule ``address.resolved``,
``detail="name=ip,ip"``, part of the recorded step and the audit), and a tool connects to
exactly those addresses with :func:`pinned`, sending the name only as the ``Host`` header and
TLS server name. A name the check did not resolve has no pin: refuse to connect to it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from .._types import Detection, PassResult, Verdict
from ..guardrail import call_user

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], "Iterable[str] | Awaitable[Iterable[str]]"]
"""``(host) -> addresses``: every A and AAAA answer for ``host``, as strings; sync or async.
A sync resolver runs in a thread (it may block); raising, or answering nothing, refuses."""

RESOLVED = "address.resolved"
MAX_ANSWERS = 32


class ResolveError(Exception):
    """A name could not be resolved; the check refuses (fail closed)."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"could not resolve {name!r} ({why})")
        self.name = name


async def system_resolver(host: str) -> list[str]:
    """Every A and AAAA answer from the system resolver, through the loop's executor."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def _one(name: str, resolver: Resolver) -> list[IP]:
    try:
        # A sync resolver may block: it runs on the bounded pool of user-code threads.
        raw: Any = await call_user(resolver, name, label=f"address resolver for {name!r}")
        answers = [str(a) for a in raw]
    except asyncio.CancelledError:
        raise
    except Exception as err:
        raise ResolveError(name, f"{type(err).__name__}: {err}") from None
    if not answers:
        raise ResolveError(name, "no A or AAAA answer")
    ips: list[IP] = []
    for a in answers[:MAX_ANSWERS]:
        try:
            ips.append(ipaddress.ip_address(a.split("%", 1)[0]))
        except ValueError:
            raise ResolveError(name, f"the resolver answered {a[:60]!r}, not an address") from None
    return sorted(set(ips), key=lambda ip: (ip.version, int(ip)))


async def resolve_all(
    names: Iterable[str], resolver: Resolver, *, timeout: float
) -> dict[str, list[IP]]:
    """Every name's addresses, resolved concurrently within ``timeout`` seconds."""
    ordered = list(dict.fromkeys(names))
    try:
        async with asyncio.timeout(timeout):
            found = await asyncio.gather(*(_one(n, resolver) for n in ordered))
    except TimeoutError:
        raise ResolveError(", ".join(ordered), f"no answer within {timeout:g}s") from None
    return dict(zip(ordered, found, strict=True))


def pin_detail(name: str, ips: Iterable[IP]) -> str:
    return f"{name}=" + ",".join(str(ip) for ip in ips)


def pinned(source: PassResult | Verdict | Iterable[Detection]) -> dict[str, tuple[str, ...]]:
    """The addresses a DNS-mode ``address`` check judged, by name: connect to these only.

    Args:
        source: The pass result of the check, one of its verdicts, or its detections.

    Example::

        pins = pinned(result)              # {"api.example.org": ("93.184.216.34",)}
        ip = pins["api.example.org"][0]    # connect here; Host / SNI stay the name
    """
    if isinstance(source, PassResult):
        detections: Iterable[Detection] = (d for v in source.verdicts for d in v.detections)
    elif isinstance(source, Verdict):
        detections = source.detections
    else:
        detections = source
    out: dict[str, tuple[str, ...]] = {}
    for d in detections:
        if d.rule == RESOLVED and d.detail and "=" in d.detail:
            name, _, ips = d.detail.partition("=")
            out[name] = tuple(ip for ip in ips.split(",") if ip)
    return out


def resolver_from(extra: Mapping[str, Any], key: str | None) -> Resolver:
    """The resolver registered under ``key`` in ``Resources.extra``, or the system resolver."""
    if key is None:
        return system_resolver
    found = extra.get(key)
    if not callable(found):
        known = ", ".join(sorted(k for k, v in extra.items() if callable(v))) or "none"
        raise LookupError(
            f"no DNS resolver named {key!r} is registered on this worker (callables in extra: "
            f"{known}); pass DuraguardPlugin(extra={{{key!r}: resolve}}), or resolver=None for "
            "the system resolver"
        )
    resolver: Resolver = found
    return resolver
