"""Text a model reads through escapes and encodings: percent-encoding, HTML references and JSON
escapes (:func:`unescaped`); base64 (standard or URL-safe, on one line or wrapped),
hex (``69676e6f7265``, ``\\x69\\x67``), ROT13, and text written backwards.

A page that says "decode this and do what it says" and then gives ``aWdub3JlIHByZXZpb3Vz...``
carries its order where no pattern reads it as drawn; a model decodes base64 and ROT13 on sight.
:func:`encoded_readings` gives the injection markers the decoded texts to read besides the text
(:func:`duraguard._noting.marker_readings` reads each as it reads any text).

Bounded and linear: a run is decoded only where its first bytes decode to text (an image or a
digest in base64 costs one short decode), at most :data:`MAX_DECODED` characters of runs are
decoded per text (past that the text is marked, unread), decoded text is decoded again at most :data:`MAX_DEPTH` deep, and ROT13 and
backwards readings are made only of a text with one of their words in it.

Not read: an order spread over several runs, in another encoding (base32, Morse, a cipher with
another key), or put in other words before it is encoded. Known false alarm: the readings that
split words inside a run of letters and read its digits as letters
(:func:`duraguard._noting.plain_words`) find an order ("to ai") by chance in about one of
fifteen 4 MB runs of random base64 in the unread rest of a page, which is then marked.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import urllib.parse

MAX_DECODED = 1024 * 1024
"""Characters of encoded runs decoded whole per text (a run that does not start as text is not
counted). Past it the rest are not read, and the text reads as :data:`UNREAD`: it marks the
content (fails closed). Outside content read whole holds 128 KiB of text at most
(:data:`duraguard._provenance.MAX_TEXT_NOTED`), so only the unread rest of a page can reach it."""
UNREAD = "<|undecoded|>"
"""The reading that stands for encoded text past :data:`MAX_DECODED`: a chat template's token,
which the markers read as an order to the agent."""
MAX_DEPTH = 2
"""Encodings read inside each other (base64 of hex, base64 of base64)."""

_B64 = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}+(?:={1,2}|(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/_-]{8,}+)*+={0,2})"
)
"""A run of base64 of at least 12 bytes (a MIME body's lines joined; ``-`` and ``_`` for the
URL-safe alphabet). Each repetition starts at a line break, so a run is tried once (linear)."""
NOISE = re.compile(r"(?<![A-Za-z0-9+/_-])(?=[A-Za-z0-9+/_-]*?[0-9+/])[A-Za-z0-9+/_-]{16,}+")
"""A run of base64's alphabet with a digit, a ``+`` or a ``/`` in it: an image, a key, a digest
as drawn. Read for words, its letters make some by chance (``+ai/``, ``4I`` read as ``ai``); what
it decodes to is read on its own (:func:`encoded_readings`)."""
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}){12,}")
"""A run of base64's alphabet that is hex: at least 12 bytes of it, bare."""
_HEX_ESCAPES = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}+")
"""At least 8 bytes written as ``\\x`` escapes."""
_URLSAFE = str.maketrans("-_", "+/")
_BLANKS = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PROBE = 64
"""Characters of a run decoded first, to tell text from an image or a digest."""
_WORD = re.compile(r"[^\W_]")

_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_WORDS = ("ignore", "disregard", "instruction", "previous", "assistant", "forget", "system prompt")
_ROT13_WORDS = tuple(w.translate(_ROT13) for w in _WORDS)
"""The words of an order as ROT13 writes them (``vtaber``, ``vafgehpgvba``...)."""
_ROT13_RE = re.compile(r"\b(?:" + "|".join(_ROT13_WORDS) + ")")
_BACKWARDS_WORDS = tuple(w[::-1] for w in _WORDS)
"""The same words backwards (``erongi``, ``noitcurtsni``...)."""
_BACKWARDS_RE = re.compile("(?:" + "|".join(_BACKWARDS_WORDS) + r")\b")
"""Either, where a word starts (ROT13) or ends (backwards) with it: not inside a run of base64."""


def _text(data: bytes) -> str | None:
    """``data`` as text, where it is some (UTF-8, no control characters but white space, a letter
    or a digit in it); ``None`` for bytes that are not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if not _CONTROL.search(text) and _WORD.search(text) else None


def _starts_as_text(head: bytes) -> bool:
    """Whether the first bytes of a run are text: an image, a key or a digest costs this one
    short decode. The probe may end inside a character: that cut is forgiven."""
    return _text(head) is not None or _text(head[:-3]) is not None


def _b64(run: str, probe: bool = False) -> str | None:
    if probe:
        cut = min(len(run) - len(run) % 4, _PROBE)
        return "" if _starts_as_text(base64.b64decode(run[:cut])) else None
    return _text(base64.b64decode(run + "=" * (-len(run) % 4)))


def _hex(run: str, probe: bool = False) -> str | None:
    digits = run.replace("\\x", "")
    if probe:
        return "" if _starts_as_text(bytes.fromhex(digits[:_PROBE])) else None
    return _text(bytes.fromhex(digits))


def _decoded_runs(text: str) -> list[str]:
    """The runs of base64 and hex in ``text`` that decode to text, decoded; :data:`UNREAD` last
    where more than :data:`MAX_DECODED` characters of them were to be decoded."""
    out: list[str] = []
    budget = MAX_DECODED
    runs = [(_BLANKS.sub("", m.group()), _b64) for m in _B64.finditer(text)]
    if "\\x" in text:
        runs += [(m.group(), _hex) for m in _HEX_ESCAPES.finditer(text)]
    for run, decode in runs:
        try:
            if decode is _b64:
                if _HEX.fullmatch(run):  # hex is written in base64's alphabet
                    decode = _hex
                elif run.lower() == run or run.upper() == run:
                    continue  # base64 of text mixes cases; a path or a name in one case is not
                else:
                    run = run.rstrip("=").translate(_URLSAFE)
            if decode(run, probe=True) is None:
                continue
            budget -= len(run)
            if budget < 0:
                return [*out, UNREAD]
            got = decode(run)
        except (binascii.Error, ValueError):
            continue
        if got is not None:
            out.append(got)
    return out


def encoded_readings(text: str) -> list[str]:
    """What ``text`` says where a model decodes it: each run of base64 or hex in it decoded
    (and runs inside those, :data:`MAX_DEPTH` deep), the text in ROT13 and backwards where one
    of the words of an order is written so; ``[]`` where nothing in it decodes to text. Past
    :data:`MAX_DECODED`, :data:`UNREAD` is one of them (the content is marked)."""
    out: list[str] = []
    if len(text) < 6:
        return out  # holds no run, nor a word of an order
    todo = [text] if len(text) >= 16 else []
    for _ in range(MAX_DEPTH):
        found = [d for t in todo if t is not UNREAD for d in _decoded_runs(t)]
        out += found
        todo = found
        if not todo:
            break
    low = text.lower()
    if any(w in low for w in _ROT13_WORDS) and _ROT13_RE.search(low):
        out.append(text.translate(_ROT13))
    if any(w in low for w in _BACKWARDS_WORDS) and _BACKWARDS_RE.search(low):
        out.append(text[::-1])
    return out


_JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_UNESCAPE_PASSES = 3
"""Escapes read inside escapes (``%2549gnore`` is ``%49gnore`` is ``Ignore``), at most this deep."""


def as_read(text: str) -> list[str]:
    """``text``, and what a model reads in it through escapes and encodings."""
    u = unescaped(text)
    return [text, *encoded_readings(text)] + ([u, *encoded_readings(u)] if u else [])


def unescaped(text: str) -> str | None:
    """``text`` as the agent reads it where it is written in escapes (a URL's or a form's
    percent-encoding, ``+`` for a space in a text with none; HTML character references,
    ``&#73;gnore``, ``&lt;INFORMATION&gt;``; JSON ``\\u`` escapes left in a text; escapes
    inside escapes up to :data:`MAX_UNESCAPE_PASSES` deep), or ``None`` where it holds none
    that stand for anything. A model reads through them; the markers are looked for in both.
    Linear, one scan a pass."""
    if (
        "%" not in text
        and "&" not in text
        and "\\" not in text
        and not ("+" in text and " " not in text)
    ):
        return None
    out = text
    for _ in range(MAX_UNESCAPE_PASSES):
        was = out
        if "+" in out and " " not in out:
            out = out.replace("+", " ")
        if "%" in out:
            out = urllib.parse.unquote(out)
        if "&" in out:
            out = html.unescape(out)
        if "\\u" in out:
            out = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), out)
            if _SURROGATE.search(out):  # a pair of escapes stands for one character (a tag)
                out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if out == was:
            break
    return out if out != text else None


__all__ = [
    "MAX_DECODED",
    "MAX_DEPTH",
    "MAX_UNESCAPE_PASSES",
    "as_read",
    "encoded_readings",
    "unescaped",
]
