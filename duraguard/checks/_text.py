"""Walking JSON values (every leaf with its JSON Pointer, rebuilding with replacements), and the
normalised text every content check reads (NFKC, invisible characters removed, offsets kept)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer(parts: tuple[Any, ...]) -> str:
    return "#" + "".join(f"/{_escape(str(p))}" for p in parts)


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Yield ``(path, leaf)`` for every scalar in a JSON value, depth first, keys in order."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path, value


def transform(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Rebuild a JSON value with ``fn`` applied to every scalar leaf."""
    if isinstance(value, dict):
        return {k: transform(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [transform(v, fn) for v in value]
    return fn(value)


OFFLOAD_CHARS = 16_384
"""Content checks read a value with at least this much text in a thread, off the event loop."""


def text_size(value: Any, cap: int) -> int:
    """Characters of text in ``value``'s strings, counted up to ``cap`` (then it stops)."""
    total = 0
    for _, leaf in leaves(value):
        if isinstance(leaf, str):
            total += len(leaf)
            if total >= cap:
                break
    return total


def text_of(value: Any) -> str:
    """All the text in a value, one leaf a line (for classifiers that read prose), as given."""
    if isinstance(value, str):
        return value
    return "\n".join(
        str(v)
        for _, v in leaves(value)
        if isinstance(v, str | int | float) and not isinstance(v, bool)
    )


# -- normalisation: what a content check reads --------------------------------------------------

# Characters that render as nothing (or nearly) and so can split a card number, an address or a
# word without a reader noticing: every format character (Unicode category Cf: zero-width space,
# joiners, soft hyphen, word joiner, bidi controls, BOM, tags), variation selectors, the
# combining grapheme joiner, Hangul fillers, Khmer inherent vowels and Mongolian selectors.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F), (0xE0100, 0xE01EF),
)  # fmt: skip
_INVISIBLE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _INVISIBLE_RANGES) + "]")
_FOREIGN_DIGIT = re.compile(r"(?![0-9])\d")
# Hyphens and minus signs NFKC keeps apart from "-": a separator written with any of them
# still separates (123‑45‑6789 with non-breaking hyphens is an SSN).
_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2796\ufe58")
# Full stops IDNA reads as the dot between labels (ana@example。com reaches example.com) that
# NFKC keeps apart from ".": the ideographic and the halfwidth ideographic full stop.
_DOTS = frozenset("\u3002\uff61")


def invisible(ch: str) -> bool:
    """Whether ``ch`` is dropped by :func:`normalise` (a format or other invisible character)."""
    return _INVISIBLE.match(ch) is not None or unicodedata.category(ch) == "Cf"


@dataclass(frozen=True, slots=True)
class Normalised:
    """A text as content checks read it, and the way back to the original's offsets.

    ``text`` is NFKC of the original with invisible characters removed, every decimal digit
    written in ASCII, every hyphen or minus sign written ``-`` and every full stop IDNA
    reads as a dot written ``.``. :meth:`span` maps a span of ``text`` to the span of the original that
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
    """NFKC, invisible characters removed, digits and dashes in ASCII; offsets kept (see
    :class:`Normalised`).

    ASCII text is returned as it is, without copying or mapping (the common case costs a scan).
    """
    if text.isascii() or (
        unicodedata.is_normalized("NFKC", text)
        and _INVISIBLE.search(text) is None
        and _FOREIGN_DIGIT.search(text) is None
        and not _DASHES.intersection(text)
        and not _DOTS.intersection(text)
        and not any(unicodedata.category(c) == "Cf" for c in text if not c.isascii())
    ):
        return Normalised(text, text)
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    # A cluster is a character and the combining marks after it: NFKC composes within it.
    cluster: list[str] = []
    first = last = 0

    def flush() -> None:
        if not cluster:
            return
        for ch in unicodedata.normalize("NFKC", "".join(cluster)):
            if invisible(ch):
                continue
            if ch.isdecimal() and not ch.isascii():
                ch = str(unicodedata.decimal(ch))
            elif ch in _DASHES:
                ch = "-"
            elif ch in _DOTS:
                ch = "."
            out.append(ch)
            starts.append(first)
            ends.append(last + 1)
        cluster.clear()

    for i, ch in enumerate(text):
        if invisible(ch):
            continue
        if cluster and unicodedata.combining(ch):
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
