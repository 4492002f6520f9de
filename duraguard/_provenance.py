"""Where the values of a session came from: the person's words, a tool's result, outside content.

Pure and deterministic (it runs inside workflow code). The ledger notes every value it sees
under a source (``turn:i``, ``prompt``, ``result:j``, ``outside:<label>``); a check of a new
call asks where each of the call's own values was seen before (:meth:`Sources.lookup`).
"""

from __future__ import annotations

import re
from typing import Any

from ._reading import read
from ._types import Provenance

MAX_TOKENS_PER_SOURCE = 256
MAX_SOURCES_PER_TOKEN = 8

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9@._:/+-]*")


def tokens(value: Any) -> set[str]:
    """Normalised scalar tokens of a value, for provenance (lower case, no trailing punctuation)."""
    out: set[str] = set()

    def add(leaf: Any) -> None:
        if isinstance(leaf, bool) or leaf is None:
            return
        if isinstance(leaf, int | float):
            out.add(_num(leaf))
            return
        text = str(leaf)
        out.add(text.strip().lower())
        for t in _TOKEN.findall(text):
            t = t.rstrip(".:/-").lower()
            if t:
                out.add(t)
                n = _maybe_num(t)
                if n is not None:
                    out.add(n)

    for _, leaf in leaves(value):
        add(leaf)
    return out


def said(text: str) -> set[str]:
    """The typed values a person's text holds (amounts in words, dates, ids), normalised."""
    return read(text).all()


def leaf_keys(leaf: Any) -> set[str]:
    """The forms one of a call's values is looked up under: whole value, as a number, as an id;
    for prose, only its value-like words (with a digit, ``@`` or ``/``)."""
    if isinstance(leaf, int | float) and not isinstance(leaf, bool):
        return {_num(leaf)}
    text = str(leaf).strip()
    low = text.lower()
    if not text:
        return set()
    if " " not in text and len(text) <= 200:
        keys = {low, low.lstrip("#").rstrip("/")}
        n = _maybe_num(low.lstrip("$€£¥"))
        if n is not None:
            keys.add(n)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", low):
            keys.add("--" + low[5:10])
        return keys
    return {t.rstrip(".:/-").lower() for t in _TOKEN.findall(text) if re.search(r"[\d@/]", t)}


def _num(x: float) -> str:
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        return str(f)
    return str(int(f)) if f.is_integer() else repr(round(f, 6))


def _maybe_num(t: str) -> str | None:
    try:
        return _num(float(t.replace(",", "")))
    except (ValueError, OverflowError):
        return None


def leaves(value: Any, path: str = "#") -> list[tuple[str, Any]]:
    """``(JSON Pointer, scalar)`` for every scalar of a JSON value, depth first."""
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out.extend(leaves(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}"))
        return out
    if isinstance(value, list | tuple):
        out = []
        for i, v in enumerate(value):
            out.extend(leaves(v, f"{path}/{i}"))
        return out
    return [(path, value)]


class Sources:
    """The provenance index: token -> where it was seen. Carried in the ledger's state."""

    def __init__(self, index: dict[str, list[str]]) -> None:
        self.index = index

    def note(self, value: Any, source: str, extra: set[str] | None = None) -> None:
        """Remember every token of ``value`` (and ``extra``) as seen at ``source``."""
        found = tokens(value) | (extra or set())
        for i, t in enumerate(sorted(found)):
            if i >= MAX_TOKENS_PER_SOURCE:
                break
            seen = self.index.setdefault(t, [])
            if source not in seen and len(seen) < MAX_SOURCES_PER_TOKEN:
                seen.append(source)

    def lookup(self, args: Any) -> tuple[Provenance, ...]:
        """Where each of a call's own values was seen before."""
        out = []
        for path, leaf in leaves(args):
            if isinstance(leaf, bool) or leaf is None:
                continue
            srcs: list[str] = []
            for t in sorted(leaf_keys(leaf)):
                for s in self.index.get(t, ()):
                    if s not in srcs:
                        srcs.append(s)
            if srcs:  # the value itself stays in the subject: a check's input carries it once
                out.append(Provenance(path=path, sources=tuple(srcs)))
        return tuple(out)
