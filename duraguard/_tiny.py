"""Values too small to trace by their text alone: short ids, small numbers, common words.

Pure and deterministic (it runs inside workflow code). ``13``, ``Bob`` or ``general`` turn up
everywhere: in dates, counts, prose. Where such a value was introduced, and as what, says more
than where it was seen, so the provenance index notes a trusted result's tiny values under the
names of their fields (``file=13`` for ``list_files``' ``id``), the person's under what they
state as values (``said:13``; "June 13" states a date), and looks a tiny value of a call up
under its argument's name (:func:`tiny_keys`). Outside content that holds it anywhere still
counts: that only makes an answer stricter.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ._provenance import _maybe_num, _num, _plain

_ROLE_SKIP = frozenset(
    {"the", "of", "to", "for", "in", "on", "by", "new", "my", "all", "get", "list", "search",
     "read", "find", "fetch", "show", "query", "lookup", "look"}
)  # fmt: skip
_DIGITS = re.compile(r"-?\d{1,4}(?:\.\d{1,2})?")
_COMMON = re.compile(r"[a-z]{4,10}")


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_LETTERS = re.compile(r"[a-z]+")


@lru_cache(maxsize=4096)
def role_words(name: str) -> frozenset[str]:
    """What an argument's or a field's name says it holds: ``file_id`` -> ``file``, ``id``;
    ``hotel_names`` -> ``hotel``, ``name``; ``id_`` -> ``id``. (Kept per name: a session
    reads the same few field names call after call.)"""
    spaced = _CAMEL.sub(r"\1 \2", name)
    out = set()
    for w in _LETTERS.findall(spaced.lower()):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if len(w) >= 2 and w not in _ROLE_SKIP:
            out.add(w)
    return frozenset(out)


def tiny(leaf: Any) -> tuple[str, str] | None:
    """``(kind, form)`` of a value too small to trace by its text alone, else ``None``: a
    number of at most four digits (``num``: ``13``, ``2200``, ``4.5``), any text of at most
    three characters (``short``: ``Bob``, ``A1``) or one common lower-case word (``word``:
    ``general``, ``notes``). Such a text turns up everywhere; where it was introduced, and as
    what, says more than where it was seen."""
    t = type(leaf)
    if t is bool or leaf is None:
        return None
    if t is int or t is float:
        form = _num(leaf)
        return ("num", form) if _DIGITS.fullmatch(form) else None
    raw = str(leaf).strip()
    text = _plain(raw)
    if not text:
        return None
    if _DIGITS.fullmatch(text):
        n = _maybe_num(text)
        return ("num", n) if n is not None else None
    if len(text) <= 3:
        return ("short", text.lstrip("#@"))
    if _COMMON.fullmatch(raw):
        return ("word", text)
    return None


_ID_WORDS = frozenset({"id", "key", "ref", "no", "number", "uid", "uuid", "index"})
"""Field names that say only "which one": the tool's own nouns say of what (``list_files``'s
``id`` is a file's)."""


def tiny_keys(kind: str, form: str, roles: frozenset[str]) -> set[str]:
    """What a tiny value is looked up under at an argument whose name says ``roles``: the person
    said it as a value (``said:13``) or beside the argument's name (``file 13``); a result
    introduced it in a field of that name (``file=13`` for ``file_id``: the id of a file, not
    of an event) or, for a word, as a whole field."""
    keys = {f"{w}={form}" for w in (roles - _ID_WORDS or roles)}
    if kind == "num":
        keys.add(f"said:{form}")
        keys.update(f"{w} {form}" for w in roles)
        keys.update(f"{form} {w}" for w in roles)
    else:
        keys.add(f"={form}")
    return keys


def keyed(value: Any, tool: str) -> set[str]:
    """The tiny values of a result under the name of the field that holds them (``amount=50``;
    an ``id`` also under the tool's nouns, ``file=13`` for ``list_files``; list items under the
    tool's nouns, ``channel=general`` for ``list_channels``), and a word that is a field's
    whole value (``=general``)."""
    out: set[str] = set()
    stack: list[tuple[Any, frozenset[str]]] = [(value, role_words(tool))]
    while stack:
        v, roles = stack.pop()
        t = type(v)
        if t is dict or isinstance(v, dict):
            for k, x in v.items():
                named = role_words(str(k))
                stack.append((x, named | roles if named <= _ID_WORDS else named))
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend((x, roles) for x in v)
        else:
            found = tiny(v)
            if found is not None:
                kind, form = found
                out.update(f"{w}={form}" for w in roles)
                if kind != "num":
                    out.add(f"={form}")
    return out


def untraceable(leaf: Any) -> bool:
    """Too small to carry a value into a result: no value, a flag, a tiny value."""
    return leaf is None or isinstance(leaf, bool) or tiny(leaf) is not None
