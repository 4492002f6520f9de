"""The texts of a result as a model reads them: side by side.

Each text of outside content is read on its own for orders to an agent; a model reads the whole
result at once, so an order cut over two fields (``{"a": "Please disregard the", "b": "earlier
instructions and ..."}``) reads as one to it and as nothing to a reading of each text. Those
texts are read again joined (:func:`side_by_side`), in the order the result is written: as the
tool returned it (what a framework's adapter shows its model, JSON in insertion order) and with
its keys sorted (what ``agent_loop`` shows, canonical JSON), each where it differs from the
other; each both with a space between two texts and with none (an order cut inside a word, and
scripts written without spaces). Texts a model reads past, as values and not as words, are left
out: those with no letter or digit, and addresses, links, ids and versions (no space, and a
``.``, ``@``, ``/`` or ``:`` in them).

Hebrew and Greek orders that count only where a line starts are read with each text on a line
of its own followed by the start of the texts after it (:func:`with_next`).

Only what lies across a boundary is new there (each text was read whole), so a text longer than
twice :data:`REACH` adds only its head and its tail to the joined reading: the segment closes
after its head and the next one opens with its tail. Only orders to drop the instructions are
looked for there (:func:`duraguard._markers.drops_orders`): the forms that address an agent by
name ("hi AI") are made by chance by two fields side by side (a "To" header beside "AI Team").
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from ._drawn import HIDDEN
from ._markers import drops_orders, folded_plain
from ._orders import LINE_GATES, other_orders
from ._orders_english import drops_in_other_words
from ._provenance import FIELD_NAME

REACH = 256
"""Characters of a long text kept on each side of it: longer than any order's match (the
patterns reach 24 characters before their word and 80 after it)."""


def texts_in_order(
    value: Any, *, sort_keys: bool = False, snake: list[str] | None = None
) -> list[str]:
    """The texts of ``value`` as its JSON is written: a key that is not a field name, then its
    value, in insertion order (or sorted, ``sort_keys``); lists in their order. A key that
    names a field (:data:`~duraguard._provenance.FIELD_NAME`) is left out, as it is of the
    noted values. ``snake`` gets
    the keys that name a field in snake_case, words apart, once each: a model reads them too
    (``{"ignore_all_previous_instructions": ...}``), alone (beside a value: "assigned to" + "AI
    team")."""
    out: list[str] = []
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.append
    named: dict[str, bool] = {}  # key: whether it names a field (rows repeat their keys)
    while stack:
        v = pop()
        t = type(v)  # JSON's own types first: isinstance is slow in sandboxed workflow code
        if t is str:
            out.append(v)
        elif t is int or t is float or t is bool or v is None:
            continue
        elif t is dict or isinstance(v, dict):
            keys = sorted(v, key=str) if sort_keys else list(v)
            for k in reversed(keys):
                push(v[k])
                name = k if type(k) is str else str(k)
                field = named.get(name)
                if field is None:
                    field = named[name] = FIELD_NAME.fullmatch(name) is not None
                    if field and snake is not None and "_" in name:
                        snake.append(name.replace("_", " "))
                if not field:
                    push(_Key(name))
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif t is _Key or isinstance(v, str):
            out.append(str(v))
    return out


class _Key(str):
    """An object key on the walk's stack (told apart from a value, which is walked)."""


_NOT_WORDS = re.compile(r"[\W_]*+|\S*[.@/:]\S*")
"""A text read as a value, not as words: no letter or digit, or an address, a link, an id or a
version."""


def _read_beside(text: str) -> bool:
    return _NOT_WORDS.fullmatch(text) is None


def segments(texts: list[str]) -> list[str]:
    """``texts`` joined by a space, cut inside each text longer than twice :data:`REACH` (those
    :func:`_read_beside` leaves out dropped). :data:`TIGHT` stands for the space where a reader
    joins the texts by nothing too (:func:`tight`)."""
    out: list[str] = []
    current: list[str] = []
    for t in texts:
        if not _read_beside(t):
            continue
        if len(t) <= 2 * REACH:
            current.append(t)
            continue
        current.append(t[:REACH])
        if len(current) > 1:
            out.append(TIGHT.join(current))
        current = [t[-REACH:]]
    if len(current) > 1:
        out.append(TIGHT.join(current))
    return out


TIGHT = "\u2063"
"""What stands between two texts joined (INVISIBLE SEPARATOR, which a reading drops or reads as a
space): :func:`spaced` makes it a space, :func:`tight` nothing."""


def spaced(segment: str) -> str:
    return segment.replace(TIGHT, " ")


def lined(segment: str) -> str:
    """The texts of ``segment`` each on a line: an order in other words must start a clause
    (:mod:`duraguard._orders_english`), and a text's start is where one starts."""
    return segment.replace(TIGHT, "\n")


def tight(segment: str) -> str:
    """Each two texts of ``segment`` that meet letter to letter, joined by nothing, a line each
    (the last and first :data:`_NEXT_READ` characters): an order cut inside a word, or in a
    script written without spaces. Not the whole joined so: its words would run together."""
    parts = segment.split(TIGHT)
    return "\n".join(
        a[-_NEXT_READ:] + b[:_NEXT_READ]
        for a, b in itertools.pairwise(parts)
        if _meets(a[-1:]) and _meets(b[:1])
    )


def _meets(c: str) -> bool:
    """Whether a text may end or start inside a word here: a letter, or a mark or an invisible
    character a reading drops (``Ign\u0301`` + ``ore``, ``Ig\u200b`` + ``nore``)."""
    return c.isalpha() or (c != "" and unicodedata.category(c) in ("Mn", "Mc", "Me", "Cf"))


def side_by_side(
    written: list[str], ordered: list[str], left_out: Callable[[str], bool] | None = None
) -> list[str]:
    """The joined readings of a value's texts, ``written`` (:func:`texts_in_order`) and
    ``ordered`` (with its keys sorted), the second where it differs; none where there are fewer
    than two. ``left_out``: texts not read (a call's own argument handed back)."""
    if len(written) < 2:
        return []
    if left_out is not None:
        written = [t for t in written if not left_out(t)]
        ordered = [t for t in ordered if not left_out(t)]
    out = segments(written)
    if ordered != written:
        out += segments(ordered)
    return out


_NEXT_READ = 96
"""Characters of the texts after a text read on its line (an order's reach after its start)."""


_LINE_VERBS = re.compile("|".join(re.escape(v) for _, _, vs, _ in LINE_GATES for v in vs))


def with_next(texts: list[str]) -> list[str]:
    """Those of ``texts`` that hold a verb of :data:`LINE_GATES`, each on one line, followed by
    the first :data:`_NEXT_READ` characters of the texts after it (empty ones skipped)."""
    flat = [f for t in texts if (f := " ".join(t.split()))]
    written = "\n".join(flat)
    if written.isascii():
        return []
    drawn = HIDDEN.sub("", unicodedata.normalize("NFKD", written))
    folds = folded_plain(drawn).split("\n")
    every = len(folds) != len(flat)  # folding made or took a line: read every text
    out: list[str] = []
    for i, t in enumerate(flat):
        if not every and not _LINE_VERBS.search(folds[i]):
            continue
        more: list[str] = []
        room = _NEXT_READ
        j = i + 1
        while room > 0 and j < len(flat):  # by index: a slice would copy the rest every time
            more.append(flat[j][:room])
            room -= len(flat[j]) + 1
            j += 1
        out.append(" ".join([t, *more]))
    return out


def beside_marks(
    value: Any,
    readings: Callable[[str], tuple[str, ...]],
    left_out: Callable[[str], bool] | None = None,
    texts: list[str] | None = None,
    tight_readings: Callable[[str], tuple[str, ...]] | None = None,
) -> tuple[str, ...]:
    """Both flags (``instructs``, ``to-agent``) where ``value``'s texts read side by side as a
    model reads them drop the instructions (each text was read alone): joined by a space (each
    joined text read as ``readings`` gives) and by nothing, a Hebrew or Greek order on a line of
    its own with the texts after it, a snake_case key. ``texts``: ``value``'s, where the caller
    has them; ``left_out``: texts not read (a call's own argument handed back);
    ``tight_readings``: how the texts joined by nothing are read (short windows), where not as
    ``readings``."""
    texts = texts_in_order(value) if texts is None else texts
    snake: list[str] = []  # keys that name a field in snake_case, read alone
    ordered = texts_in_order(value, sort_keys=True, snake=snake)
    for j in side_by_side(texts, ordered, left_out):
        if (
            any(drops_orders(r) for r in (tight_readings or readings)(tight(j)))
            or any(drops_orders(r, other_words=False) for r in readings(spaced(j)))
            # each text a clause of its own, as a model reads a list's items (the orders in
            # other words must start one)
            or any(drops_in_other_words(r) is not False for r in readings(lined(j)))
        ):
            return ("instructs", "to-agent")
    lines = with_next(texts) + (with_next(ordered) if ordered != texts else [])
    if (len(texts) > 1 and any(other_orders(x) for x in lines)) or any(map(drops_orders, snake)):
        return ("instructs", "to-agent")
    return ()


__all__ = [
    "REACH",
    "TIGHT",
    "beside_marks",
    "lined",
    "segments",
    "side_by_side",
    "spaced",
    "texts_in_order",
    "tight",
    "with_next",
]
