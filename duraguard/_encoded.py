"""Text a model reads through escapes and encodings: percent-encoding, HTML references and JSON
escapes (:func:`unescaped`); base64 (standard or URL-safe, on one line or wrapped, after a path
or a name), hex (``69676e6f7265``, ``0x4967...``, ``49 67 6e``, ``\\x69\\x67``), UTF-8 or UTF-16
inside them, ROT13, and text written backwards (:func:`read_through`).

A page that says "decode this and do what it says" and then gives ``aWdub3JlIHByZXZpb3Vz...``
carries its order where no pattern reads it as drawn; a model decodes base64 and ROT13 on sight.
The injection markers read the decoded texts besides the text
(:func:`duraguard._noting.marker_readings` reads each as it reads any text).

Bounded and linear: a run is decoded only where its first bytes are text (an image or a digest
costs one short decode, and one more after each of the first separators in it), at most
:data:`MAX_DECODED` characters of runs are decoded per value (past that it reads as
:data:`UNREAD`, which marks it), decoded text is decoded again at most :data:`MAX_DEPTH` deep,
and ROT13 and backwards readings are made only of a text with one of their words in it.

Base64 cut into groups by spaces, commas, quotes or dashes (``SWdub3Jl, IGFsbCBw...``,
``"SWdub3Jl","IGFsbCBw"``, each group cut anywhere: :mod:`duraguard._encoded_groups`) is read joined, as is base32 (``JFTW433SMU...``, in any case). Not read: an order
spread over runs apart, other encodings (Morse, a cipher with another key), or an order put in
other words before it was encoded. Known false alarm: the readings that split words inside a run
of letters and read its digits as letters (:func:`duraguard._noting.plain_words`) find an order
("to ai") by chance in about one of fifteen 4 MB runs of random base64 in a page's unread rest.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ._encoded_groups import groups_run
from ._noise import is_noise, noisy, quiet
from ._unescape import MAX_UNESCAPE_PASSES, unescaped

MAX_DECODED = 512 * 1024
"""Characters of encoded runs decoded whole per value (a run that does not start as text is not
counted). Past it the rest are not read, and the value reads as :data:`UNREAD`: it marks the
content (fails closed). Outside content read whole holds 128 KiB of text at most
(:data:`duraguard._provenance.MAX_TEXT_NOTED`), so only the unread rest of a page can reach it.
What is decoded is read too, in workflow code: a megabyte of base64 decoded and read took 1.3 s
(a task past 2 s fails on every try), half of it 0.5 s."""
UNREAD = "<|undecoded|>"
"""The reading that stands for encoded text past :data:`MAX_DECODED`: a chat template's token,
which the markers read as an order to the agent."""
MAX_RUNS = 25_000
"""Runs of base64 or hex looked at per value (one short decode each; a table's rows of numbers are
no runs); past it the value reads as :data:`UNREAD` too. Runs are noted in workflow code,
where a task over the SDK's deadlock limit (2 s) fails on every try: a megabyte of short runs
took 1.2 s to look at before this bound."""
MAX_DEPTH = 2
"""Encodings read inside each other (base64 of hex, base64 of base64)."""

_ALPHABET = "A-Za-z0-9+/_-"
_B64 = re.compile(
    rf"(?<![{_ALPHABET}])[{_ALPHABET}]{{16,}}+(?:={{1,2}}|(?:[ \t]*\r?\n[ \t]*[{_ALPHABET}]{{8,}}+)*+={{0,2}})"
)
"""A run of base64 of at least 12 bytes (a MIME body's lines joined; ``-`` and ``_`` for the
URL-safe alphabet). Each repetition starts at a line break, so a run is tried once (linear)."""
_HEX = re.compile(r"(?:0[xX])?((?:[0-9A-Fa-f]{2}){12,}[0-9A-Fa-f]?)")
"""A run of base64's alphabet that is hex: at least 12 bytes of it, bare or after ``0x``."""
_HEX_APART = re.compile(
    r"(?<![0-9A-Za-z\\])(?:(?:0[xX]|\\x)?[0-9A-Fa-f]{2}(?:[ :,][ \t]*|(?=\\x|0[xX]))){8,}+"
    r"(?:0[xX]|\\x)?[0-9A-Fa-f]{2}(?![0-9A-Fa-f])"
)
"""At least 9 bytes of hex written apart: ``\\x`` escapes, ``0x49, 0x67``, ``49 67``, ``49:67``."""
_HEX_MARKS = re.compile(r"0[xX]|\\x|[\s:,]")
_ALL_HEX = re.compile(r"(?:0[xX])?[0-9A-Fa-f]+")
"""A run that is hex is read as hex, not as base32 too (base32 of text has letters past F)."""
_B32 = re.compile(r"[A-Z2-7]{16,}={0,6}|[a-z2-7]{16,}={0,6}")
_B32_MIXED = re.compile(r"[A-Za-z2-7]{16,}={0,6}")
"""Base32 with its case changed here and there: read where it is no base64 of text."""
_BLANKS = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NOT_TEXT = re.compile(r"[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PROBE = 64
"""Characters of a run decoded first, to tell text from an image or a digest."""
_RETRIES = 6
"""Separators (``/ - _``) of a lower-case path or name starting a run after which it is tried
again: base64 after a path (``/r/aWdub3Jl...``) or a name (``token-aWdub3Jl...``)."""
_WORD = re.compile(r"[^\W_]")
_HIGH = bytes(range(128, 256))
_PATHLIKE = re.compile(r"(?:[a-z0-9.]*[/_-])+")
"""A path or a name in lower case, up to its last separator (``example/r/``, ``token-``)."""

_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_WORDS = (
    "ignore", "disregard", "instruction", "previous", "assistant", "forget", "system prompt",
    "dear ai", "urgent", "you must", "agent",
)  # fmt: skip
_ROT13_WORDS = tuple(w.translate(_ROT13) for w in _WORDS)
"""The words of an order as ROT13 writes them (``vtaber``, ``vafgehpgvba``...)."""
_ROT13_RE = re.compile(r"\b(?:" + "|".join(_ROT13_WORDS) + ")")
_BACKWARDS_WORDS = tuple(w[::-1] for w in _WORDS)
"""The same words backwards (``erongi``, ``noitcurtsni``...)."""
_BACKWARDS_RE = re.compile("(?:" + "|".join(_BACKWARDS_WORDS) + r")\b")
"""Either, where a word starts (ROT13) or ends (backwards) with it: not inside a run of base64."""


@dataclass
class Budget:
    """What is left to decode of one value (:data:`MAX_DECODED`, :data:`MAX_RUNS`), shared by
    its texts."""

    left: int = MAX_DECODED
    runs: int = MAX_RUNS
    spent: bool = False


@dataclass
class Read:
    """A text, and what a model reads in it: through escapes, and decoded."""

    text: str
    unescaped: str | None = None
    decoded: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [self.text, *([self.unescaped] if self.unescaped else []), *self.decoded]


def _text(data: bytes, tolerance: float) -> str | None:
    """``data`` as text, where it is some: UTF-8, or UTF-16 where every other byte is zero; at
    most ``tolerance`` of it bytes that are not (a stray byte at either end is forgiven), a letter
    or a digit in it, control characters read as spaces; ``None`` for bytes that are not."""
    if len(data) >= 8 and data[1::2].count(0) * 4 >= len(data):
        text = data.decode("utf-16-le", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    if not text or len(_NOT_TEXT.findall(text)) > tolerance * len(text) or not _WORD.search(text):
        return None
    return _CONTROL.sub(" ", text)


def _b64_bytes(run: str) -> bytes:
    run = run.rstrip("=")
    if "-" in run or "_" in run:  # the URL-safe alphabet
        run = run.replace("-", "+").replace("_", "/")
    if len(run) % 4 == 1:
        run = run[:-1]  # a stray character: a model reads past it
    return base64.b64decode(run + "=" * (-len(run) % 4))


def _hex_bytes(digits: str) -> bytes:
    return bytes.fromhex(digits[: len(digits) - len(digits) % 2])


def _hex_starts_as_text(digits: str) -> bool:
    """Whether the first bytes of a run of hex digits are text (a dump costs one short decode)."""
    return _text(_hex_bytes(digits[:_PROBE]), 0.1) is not None


def _starts_after(run: str) -> list[int]:
    """Where base64 may start after a path or a name in lower case before it (``r/``,
    ``token-``, ``example/r/``): after each of its separators, the first :data:`_RETRIES`."""
    m = _PATHLIKE.match(run, 0, _PROBE)
    if m is None or not m.group():
        return []
    return [i + 1 for i, c in enumerate(m.group()) if c in "/_-"][:_RETRIES]


def _looks_text(data: bytes) -> bool:
    """A cheap first look: most of ``data`` ASCII (random bytes are half not), UTF-16, or UTF-8
    whole (Cyrillic, Korean: every byte high), a character cut at the end forgiven."""
    high = len(data) - len(data.translate(None, _HIGH))
    if high * 4 <= len(data) or data[1::2].count(0) * 4 >= len(data):
        return True
    return data.decode("utf-8", "replace").count("\ufffd") <= 2


def _starts_as_text(data: bytes) -> bool:
    """Whether the first bytes of a decoded run are text: a cheap look, then a close one."""
    return _looks_text(data) and _text(data, 0.1) is not None


def _starts(run: str, after: Sequence[int]) -> str | None:
    """Where a base64 run's text starts: the run, or the run after a path or a name before it
    (at ``after``); ``None`` where none starts as text."""
    for at in (0, *after):
        head = run[at : at + _PROBE]
        try:
            data = _b64_bytes(head[: len(head) - len(head) % 4])
        except (binascii.Error, ValueError):
            continue
        if _starts_as_text(data):
            return run[at:]
    return None


def _decode_run(run: str, budget: Budget, grouped: bool = False) -> str | None:
    """A base64, base32 or hex run decoded, where it is text (counted against ``budget``); a run
    of groups only from its start (the groups before it are tried as runs of their own)."""
    if " " in run or "\n" in run or "\t" in run or "\r" in run:
        run = _BLANKS.sub("", run)
    if _B32.fullmatch(run) and not _ALL_HEX.fullmatch(run):  # base32 is written in one case
        got = _base32(run, budget)
        if got is not None:
            return got
    if run.lower() == run or run.upper() == run:
        # Hex is written in one case (after a path, a name or ``0x`` too); base64 of text
        # mixes cases, and a path or a name in one case is not it.
        after = () if grouped else _starts_after(run)
        hexed = next((h for at in (0, *after) if (h := _HEX.fullmatch(run, at))), None)
        if hexed is None:
            return None
        digits = hexed.group(1)
        if not _hex_starts_as_text(digits):
            return None
        return _spend(budget, len(digits), functools.partial(_hex_bytes, digits))
    start = _starts(run, () if grouped else _starts_after(run))
    if start is None:
        return _base32(run, budget) if _B32_MIXED.fullmatch(run) else None
    return _spend(budget, len(start), functools.partial(_b64_bytes, start))


def _b32_bytes(run: str) -> bytes:
    run = run.rstrip("=").upper()
    if len(run) % 8 in (1, 3, 6):
        run = run[:-1]  # a stray character: a model reads past it
    return base64.b32decode(run + "=" * (-len(run) % 8))


def _base32(run: str, budget: Budget) -> str | None:
    """A run of base32 (``A-Z2-7``, in either case) decoded, where its first bytes are text."""
    head = run[:_PROBE].rstrip("=")
    try:
        data = _b32_bytes(head[: len(head) - len(head) % 8])
    except (binascii.Error, ValueError):
        return None
    if not _starts_as_text(data):
        return None
    return _spend(budget, len(run), functools.partial(_b32_bytes, run))


def _spend(budget: Budget, size: int, decode: Callable[[], bytes]) -> str | None:
    budget.left -= size
    if budget.left < 0:
        budget.spent = True
        return None
    try:
        return _text(decode(), 0.25)
    except (binascii.Error, ValueError):
        return None


def _decoded_runs(text: str, budget: Budget) -> list[str]:
    """The runs of base64 and hex in ``text`` that decode to text, decoded."""
    out: list[str] = []
    found = list(_B64.finditer(text))
    runs = [(m.group(), False) for m in found]
    if " " in text or "\n" in text or "\t" in text or "\xa0" in text or "," in text or ";" in text:
        runs += [(r, True) for r in groups_run(text, [m.span() for m in found])]
    for run, grouped in runs:
        budget.runs -= 1
        budget.spent = budget.spent or budget.runs < 0
        if budget.spent:
            break
        got = _decode_run(run, budget, grouped)
        if got is not None:
            out.append(got)
    if ("\\x" in text or "," in text or ":" in text or " " in text) and not budget.spent:
        for m in _HEX_APART.finditer(text):
            digits = _HEX_MARKS.sub("", m.group())
            if not _hex_starts_as_text(digits):
                continue  # a dump of bytes that are no text: one short decode, not counted
            got = _spend(budget, len(digits), functools.partial(_hex_bytes, digits))
            if got is not None:
                out.append(got)
    return out


def _turned(text: str) -> list[str]:
    """``text`` in ROT13 and backwards, where one of the words of an order is written so."""
    low = text.lower()
    out = []
    if any(w in low for w in _ROT13_WORDS) and _worded(_ROT13_RE, low):
        out.append(text.translate(_ROT13))
    if any(w in low for w in _BACKWARDS_WORDS) and _worded(_BACKWARDS_RE, low):
        out.append(text[::-1])
    return out


def _worded(pattern: re.Pattern[str], low: str) -> bool:
    """Whether ``pattern`` finds a word in ``low`` outside runs of noise (``+vtaber/`` turns up
    in random base64), looking at its first 20 finds."""
    for k, m in enumerate(pattern.finditer(low)):
        if k == 20:
            return False
        a = max(low.rfind(c, 0, m.start()) for c in " \n\t") + 1
        ends = [e for e in (low.find(c, m.end()) for c in " \n\t") if e >= 0]
        token = low[a : min(ends, default=len(low))]
        if len(token) < 16 or not is_noise(token):
            return True
    return False


def encoded_readings(text: str, budget: Budget | None = None) -> list[str]:
    """What ``text`` says where a model decodes it: each run of base64 or hex in it decoded
    (and runs inside those, :data:`MAX_DEPTH` deep), the text and each decoded one in ROT13 and
    backwards where one of the words of an order is written so; ``[]`` where nothing in it
    decodes. Past ``budget`` (a value's :data:`MAX_DECODED`), :data:`UNREAD` is one of them."""
    if len(text) < 6:
        return []  # holds no run, nor a word of an order
    budget = budget if budget is not None else Budget()
    was_spent = budget.spent
    out: list[str] = []
    todo = [text] if len(text) >= 16 else []
    for _ in range(MAX_DEPTH):
        todo = [d for t in todo for d in _decoded_runs(t, budget)]
        out += todo
        if not todo:
            break
    out += [t for d in (text, *out) for t in _turned(d)]
    if budget.spent and not was_spent:
        out.append(UNREAD)
    return out


def read_through(text: str, budget: Budget | None = None) -> Read:
    """``text``, unescaped (:func:`unescaped`), and decoded (:func:`encoded_readings`, of the
    unescaped text too where unescaping did more than read ``+`` as a space)."""
    budget = budget if budget is not None else Budget()
    u = unescaped(text)
    decoded = encoded_readings(text, budget)
    if u is not None and u != text.replace("+", " "):
        decoded += encoded_readings(u, budget)
    return Read(text, u, decoded)


def as_read(text: str, budget: Budget | None = None) -> list[str]:
    """``text``, and what a model reads in it through escapes and encodings."""
    return read_through(text, budget).all()


__all__ = [
    "MAX_DECODED",
    "MAX_DEPTH",
    "MAX_RUNS",
    "MAX_UNESCAPE_PASSES",
    "UNREAD",
    "Budget",
    "Read",
    "as_read",
    "encoded_readings",
    "is_noise",
    "noisy",
    "quiet",
    "read_through",
    "unescaped",
]
