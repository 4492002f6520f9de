"""Which members of a value name a host without a scheme: the strings and numbers under a
host-like key (``host``, ``targetHost``, ``callback_urls``, ``IPs``: any word style, singular or
plural, and inside lists at any depth), and the keys of a map under one (``{"hosts":
{"10.0.0.5": ...}}``) that look like a host. URLs are found in every key and leaf regardless."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ._hosts import LOOPBACK_NAMES, METADATA_HOSTS, parse_ip
from ._text import Piece, context_key

HOST_KEYS = (
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
    "ipv4",
    "ipv6",
    "address",
    "addr",
    "webhook",
    "callback",
    "proxy",
    "upstream",
)
"""The words that make a key host-like, as the key's last word (``target_host``, ``baseUrl``)."""

# camelCase, PascalCase, snake_case, kebab-case, dotted: "callbackURL" -> callback, URL.
_WORDS = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z]+[0-9]*|[0-9]+")


def host_like(key: str, words: Iterable[str] = HOST_KEYS) -> bool:
    """Whether ``key`` names a host: it is one of ``words`` or ends in one (singular or plural,
    in any case or word style: ``host``, ``hosts``, ``targetHost``, ``host_name``, ``IPs``)."""
    if len(key) <= 64:  # keys repeat from call to call; a long one is not kept
        return _host_like_cached(key, tuple(words))
    return _host_like(key, tuple(words))


@lru_cache(maxsize=4096)
def _host_like_cached(key: str, words: tuple[str, ...]) -> bool:
    return _host_like(key, words)


def _host_like(key: str, words: tuple[str, ...]) -> bool:
    known = _known(words)
    if key.lower() in known:
        return True
    parts = [w.lower() for w in _WORDS.findall(key)]
    if not parts:
        return False
    tails = {parts[-1], "".join(parts[-2:])}
    for tail in list(tails):
        if tail.endswith("es"):
            tails.add(tail[:-2])
        if tail.endswith("s"):
            tails.add(tail[:-1])
    return bool(tails & known)


@lru_cache(maxsize=16)
def _known(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(w.lower() for w in words)


def looks_like_host(text: str) -> bool:
    """Whether a key under a host-like key reads as a host (an IP in a dotted or IPv6 form, a
    dotted name, a host and port, a well-known internal name) rather than a field name."""
    name = text.strip().lower().rstrip(".")
    if name in LOOPBACK_NAMES or name in METADATA_HOSTS:
        return True
    if not name.isdigit() and parse_ip(name) is not None:
        return True
    return "." in name or ":" in name


def bare_host(piece: Piece, words: Iterable[str] = HOST_KEYS) -> bool:
    """Whether ``piece`` is to be judged as a host even without a scheme.

    A leaf is, where the nearest key above it is host-like, or where no key is above it at all
    (a bare string, or a list of them: what an egress check is given). A key is, where the key
    above its object is host-like and it :func:`looks_like_host`.
    """
    above = context_key(piece)
    if piece.key:
        return bool(above) and host_like(above, words) and looks_like_host(piece.text)
    return not above or host_like(above, words)
