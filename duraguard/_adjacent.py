"""The texts of a result as a model reads them: side by side.

Each text of outside content is read on its own for orders to an agent; a model reads the whole
result at once, so an order cut over two fields (``{"a": "Please disregard the", "b": "earlier
instructions and ..."}``) reads as one to it and as nothing to a reading of each text. Those
texts are read again joined, in the order the result is written: as the tool returned it (what
a framework's adapter shows its model, JSON in insertion order) and with its keys sorted (what
``agent_loop`` shows, canonical JSON), each where it differs from the other.

Hebrew and Greek orders that count only where a line starts are read with each text on a line
of its own followed by the start of the texts after it (:func:`with_next`).

Only what lies across a boundary is new there (each text was read whole), so a text longer than
twice :data:`REACH` adds only its head and its tail to the joined reading: the segment closes
after its head and the next one opens with its tail. A joined reading costs at most about twice
the length of the result's texts, whatever their number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from ._drawn import HIDDEN
from ._markers import folded_plain
from ._orders import LINE_GATES

REACH = 256
"""Characters of a long text kept on each side of it: longer than any order's match (the
patterns reach 24 characters before their word and 80 after it)."""

_FIELD_NAME = re.compile(r"[a-z_][a-z0-9_]{0,40}")
"""An object key that names a field (``body``, ``sender_id``): the model reads it between two
values, and it is left out of the joined reading as it is of the noted values."""


def texts_in_order(value: Any, *, sort_keys: bool = False) -> list[str]:
    """The texts of ``value`` as its JSON is written: a key that is not a field name, then its
    value, in insertion order (or sorted, ``sort_keys``); lists in their order."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        t = type(v)  # JSON's own types first: isinstance is slow in sandboxed workflow code
        if t is str:
            out.append(v)
        elif t is dict or isinstance(v, dict):
            items = sorted(v.items(), key=lambda kv: str(kv[0])) if sort_keys else v.items()
            for k, x in reversed(list(items)):
                stack.append(x)
                if not _FIELD_NAME.fullmatch(str(k)):
                    stack.append(_Key(str(k)))
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif t is _Key:
            out.append(str(v))
        elif isinstance(v, str):
            out.append(str(v))
    return out


class _Key(str):
    """An object key on the walk's stack (told apart from a value, which is walked)."""


def segments(texts: list[str]) -> list[str]:
    """``texts`` joined by a space, cut inside each text longer than twice :data:`REACH`."""
    out: list[str] = []
    current: list[str] = []
    for t in texts:
        if len(t) <= 2 * REACH:
            current.append(t)
            continue
        current.append(t[:REACH])
        if len(current) > 1:
            out.append(" ".join(current))
        current = [t[-REACH:]]
    if len(current) > 1:
        out.append(" ".join(current))
    return out


def side_by_side(value: Any, left_out: Callable[[str], bool] | None = None) -> list[str]:
    """The joined readings of ``value``'s texts (none where it has fewer than two): in insertion
    order, and with sorted keys where that differs. ``left_out``: texts not read (a call's own
    argument handed back)."""
    written = texts_in_order(value)
    if len(written) < 2:
        return []
    ordered = texts_in_order(value, sort_keys=True)
    if left_out is not None:
        written = [t for t in written if not left_out(t)]
        ordered = [t for t in ordered if not left_out(t)]
    out = segments(written)
    if ordered != written:
        out += segments(ordered)
    return out


_NEXT_READ = 96
"""Characters of the texts after a text read on its line (an order's reach after its start)."""


def with_next(texts: list[str]) -> list[str]:
    """Those of ``texts`` that hold a verb of :data:`LINE_GATES`, each on one line, followed by
    the first :data:`_NEXT_READ` characters of the texts after it."""
    flat = [" ".join(t.split()) for t in texts]
    drawn = HIDDEN.sub("", unicodedata.normalize("NFKD", "\n".join(flat)))
    folds = folded_plain(drawn).split("\n")
    every = len(folds) != len(flat)  # folding made or took a line: read every text
    verbs = [v for _, _, vs, _ in LINE_GATES for v in vs]
    out: list[str] = []
    for i, t in enumerate(flat):
        if not every and not any(v in folds[i] for v in verbs):
            continue
        more: list[str] = []
        room = _NEXT_READ
        for after in flat[i + 1 :]:
            if room <= 0:
                break
            more.append(after[:room])
            room -= len(after) + 1
        out.append(" ".join([t, *more]))
    return out


__all__ = ["REACH", "segments", "side_by_side", "texts_in_order", "with_next"]
