"""Walking JSON values (every leaf with its JSON Pointer, rebuilding with replacements), and the
normalised text every content check reads (NFKC, invisible characters removed, offsets kept)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._deadline import spend
from .._marks import MAX_MARKS


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer(parts: tuple[Any, ...]) -> str:
    return "#" + "".join(f"/{_escape(str(p))}" for p in parts)


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Yield ``(path, leaf)`` for every scalar in a JSON value, depth first, keys in order.

    Keys are not leaves: a check that reads text reads :func:`pieces`, which yields them too."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path, value


class Piece(NamedTuple):
    """One text a content check reads: a key, or a scalar leaf written as text."""

    path: tuple[Any, ...]
    """The member's path: for a key, the path of the member it names."""
    text: str
    key: bool = False
    """True where :attr:`text` is an object key rather than a value."""
    value: Any = None
    """The leaf itself (the key, for a key): a number's text is only one way to read it."""


def number_text(n: int | float) -> str:
    """The digits of a JSON number as a reader (or a tool formatting it) writes them: no sign, an
    integral float without its ``.0`` or exponent (``4.111111111111111e15`` is
    ``4111111111111111``), any other float as Python writes it (``0.5``, ``1.5e-07``)."""
    if isinstance(n, float):
        if n != n or n in (float("inf"), float("-inf")):
            return str(n)
        if n.is_integer():
            return str(abs(int(n)))
        return repr(abs(n))
    return str(abs(n))


def pieces(value: Any) -> Iterator[Piece]:
    """Every key and every string or number leaf of a JSON value, depth first, each key just
    before its member's value. Iterative, and holding only the containers on the way down: a
    value nested deeper than Python's recursion limit, or millions of members wide, is read
    like any other."""
    if not isinstance(value, dict | list | tuple):
        yield from _leaf((), value)
        return
    stack: list[tuple[tuple[Any, ...], Iterator[tuple[Any, Any]], bool]] = [
        ((), _members(value), isinstance(value, dict))
    ]
    while stack:
        path, members, named = stack[-1]
        step = next(members, None)
        if step is None:
            stack.pop()
            continue
        spend()
        key, item = step
        here = (*path, key)
        if named:
            yield Piece(here, str(key), True, key)
        if isinstance(item, dict | list | tuple):
            stack.append((here, _members(item), isinstance(item, dict)))
        else:
            yield from _leaf(here, item)


def _members(container: Any) -> Iterator[tuple[Any, Any]]:
    return iter(container.items()) if isinstance(container, dict) else enumerate(container)


def _leaf(path: tuple[Any, ...], v: Any) -> Iterator[Piece]:
    if isinstance(v, str):
        yield Piece(path, v, False, v)
    elif isinstance(v, int | float) and not isinstance(v, bool):
        yield Piece(path, number_text(v), False, v)


def context_key(piece: Piece) -> str:
    """The nearest key above ``piece`` (``phone`` for ``{"phone": ["..."]}`` and for the keys of
    ``{"phone": {...}}``), the context that says what a text is; ``""`` at the top."""
    path = piece.path[:-1] if piece.key else piece.path
    return next((str(p) for p in reversed(path) if isinstance(p, str)), "")


def transform(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Rebuild a JSON value with ``fn`` applied to every scalar leaf."""
    if isinstance(value, dict):
        return {k: transform(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [transform(v, fn) for v in value]
    return fn(value)


OFFLOAD_CHARS = 4096
"""Content checks read a value with at least this much text (keys and numbers counted) in a
thread, off the event loop: the slowest reading (phone numbers in digit-dense text, about 10 µs
a character) then holds the loop for at most some 40 ms."""


def text_size(value: Any, cap: int) -> int:
    """Characters of text in ``value``'s keys and leaves, counted up to ``cap`` (then it stops)."""
    total = 0
    for piece in pieces(value):
        total += len(piece.text)
        if total >= cap:
            break
    return total


def text_of(value: Any) -> str:
    """All the text in a value, one key or leaf a line (for classifiers that read prose)."""
    if isinstance(value, str):
        return value
    return "\n".join(
        piece.text if piece.key or isinstance(piece.value, str) else str(piece.value)
        for piece in pieces(value)
    )


# -- normalisation: what a content check reads --------------------------------------------------

# What renders as nothing, and so can split a card number, an address or a word without a reader
# noticing, derived from Unicode's properties rather than listed by hand: every format character
# (category Cf: zero-width space, joiners, soft hyphen, bidi controls, BOM, tags), every
# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt, which ``unicodedata`` does
# not expose: variation selectors, the combining grapheme joiner, Hangul fillers, Khmer inherent
# vowels, Mongolian selectors, the reserved ranges kept for more of them), and the one symbol
# fonts draw as a blank, the braille pattern blank.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_BLANK = (0x2800,)  # BRAILLE PATTERN BLANK (category So)
# Marks (categories Mn, Mc, Me) render on the character before them. On a digit, a dash, a
# space or a letter of the scripts that write every letter precomposed (Latin, Greek,
# Cyrillic: NFKC composes the real ones) a mark that is left is decoration and is dropped; on a
# letter of a script that spells with marks (Devanagari's virama, Hebrew points, Arabic
# harakat, Thai vowels) it is part of the word and stays. Enclosing marks (Me) always go.
_PRECOMPOSED_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC")
# Unicode assigns marks and format characters only in these planes (BMP, SMP, SSP): the rest
# are CJK ideographs and private use. tests/checks/test_whole_value.py walks every code point.
_PLANES = (range(0x20000), range(0xE0000, 0xE1000))
# Hyphens and minus signs NFKC keeps apart from "-": a separator written with any of them
# still separates (123‑45‑6789 with non-breaking hyphens is an SSN).
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2796\ufe58")
# Full stops IDNA reads as the dot between labels (ana@example。com reaches example.com) that
# NFKC keeps apart from ".": the ideographic and the halfwidth ideographic full stop.
_DOTS = frozenset("\u3002\uff61")


@dataclass(frozen=True, slots=True)
class _Tables:
    dropped: frozenset[str]
    """Code points :func:`normalise` removes wherever they are."""
    suspect: re.Pattern[str]
    """Any code point that makes :func:`normalise` change a text already in NFKC."""


@functools.cache
def _tables() -> _Tables:
    dropped: set[str] = {chr(c) for a, b in _DEFAULT_IGNORABLE for c in range(a, b + 1)}
    dropped.update(chr(c) for c in _BLANK)
    suspect: set[str] = set()
    for plane in _PLANES:
        for c in plane:
            cat = unicodedata.category(chr(c))
            if cat == "Cf":
                dropped.add(chr(c))
            elif cat[0] == "M" or (cat == "Zs" and c != 0x20):
                suspect.add(chr(c))
    suspect |= dropped | _DASHES | _DOTS
    ranges: list[tuple[int, int]] = []
    for c in sorted(ord(ch) for ch in suspect):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    klass = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    return _Tables(frozenset(dropped), re.compile(f"[{klass}]|(?![0-9])\\d"))


def invisible(ch: str) -> bool:
    """Whether ``ch`` renders as nothing: :func:`normalise` drops it wherever it stands (a mark
    is dropped or kept by what it sits on; see :func:`normalise`)."""
    return ch in _tables().dropped


def _keeps_marks(base: str) -> bool:
    """Whether marks on ``base`` spell (a letter of a script written with marks)."""
    if not unicodedata.category(base).startswith("L"):
        return False
    return not unicodedata.name(base, "").startswith(_PRECOMPOSED_SCRIPTS)


def _read(ch: str) -> str:
    """One character of NFKC output as a content check reads it."""
    if ch.isdecimal() and not ch.isascii():
        return str(unicodedata.decimal(ch))
    if ch in _DASHES:
        return "-"
    if ch in _DOTS:
        return "."
    if unicodedata.category(ch) == "Zs":
        return " "
    return ch


@dataclass(frozen=True, slots=True)
class Normalised:
    """A text as content checks read it, and the way back to the original's offsets.

    ``text`` is NFKC of the original with every character that renders as nothing removed,
    decorative marks removed (see :func:`normalise`), every space separator written ``" "``,
    every decimal digit in ASCII, every hyphen or minus sign ``-`` and every full stop IDNA
    reads as a dot ``.``. :meth:`span` maps a span of ``text`` to the span of the original that
    produced it, so a finding is masked where it really is.
    """

    text: str
    original: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of :attr:`original` that ``text[start:end]`` came from."""
        if self.starts is None or self.ends is None:
            return start, end
        if end <= start:
            at = self.starts[start] if start < len(self.starts) else len(self.original)
            return at, at
        return self.starts[start], self.ends[end - 1]


def normalise(text: str) -> Normalised:
    """The text as a person reads it, with offsets kept (see :class:`Normalised`).

    NFKC; code points that render as nothing (format characters, default-ignorable code
    points, the braille blank) removed; a mark kept only on a letter of a script that spells
    with marks (Devanagari, Hebrew, Arabic, Thai...) and dropped on anything else (a digit, a
    space, a Latin, Greek or Cyrillic letter: ``4\u0301111`` reads ``4111``, ``k\u0336ill``
    reads ``kill``); every space separator a space; digits, dashes and ideographic full stops in
    ASCII. ASCII text is returned as it is, without copying or mapping.
    """
    tables = _tables()
    if text.isascii() or (
        unicodedata.is_normalized("NFKC", text) and tables.suspect.search(text) is None
    ):
        return Normalised(text, text)
    dropped = tables.dropped
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    # A cluster is a character and the marks after it: NFKC composes within it.
    cluster: list[str] = []
    first = last = 0

    def flush() -> None:
        if not cluster:
            return
        composed = unicodedata.normalize("NFKC", "".join(cluster))
        keep = _keeps_marks(composed[0]) if composed else False
        for ch in composed:
            if ch in dropped:
                continue
            cat = unicodedata.category(ch)
            if cat[0] == "M" and (cat == "Me" or not keep):
                continue
            out.append(_read(ch))
            starts.append(first)
            ends.append(last + 1)
        cluster.clear()

    for i, ch in enumerate(text):
        if not i & 4095:
            spend(4096)  # a deadline can stop a long text between blocks
        if ch in dropped:
            continue
        if cluster and unicodedata.category(ch)[0] == "M":
            if len(cluster) <= MAX_MARKS:  # a pile of marks past it reads as nothing more (_marks)
                cluster.append(ch)
            last = i
            continue
        flush()
        cluster.append(ch)
        first = last = i
    flush()
    return Normalised("".join(out), text, tuple(starts), tuple(ends))


def replace_spans(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, replacement)`` applied (spans sorted, not overlapping)."""
    out: list[str] = []
    last = 0
    for start, end, replacement in sorted(spans):
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)
