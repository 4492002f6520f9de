"""Escapes: a value written the way a URL or a page carries it (percent-encoding, HTML character
references, JSON escapes left in a text, the bracketed at and dot of an address), read as what
they stand for, with offsets into the original kept (see :class:`._text.Normalised`)."""

from __future__ import annotations

import html.entities
import json
import re

from .._deadline import spend
from .._drawn import TAG_ASCII
from ._text import Normalised, normalise

_ESCAPE = re.compile(
    r"(?:%[0-9A-Fa-f]{2})+"  # percent-encoding, a run of bytes (UTF-8)
    r"|&#[0-9]{1,7};?|&#[xX][0-9A-Fa-f]{1,6};?"  # HTML character references
    r"|&[A-Za-z][A-Za-z0-9]{1,31};"  # HTML named references (&commat; &period;)
    r"|(?:\\u[0-9A-Fa-f]{4})+|\\x[0-9A-Fa-f]{2}"  # JSON and Python escapes left in a text
    r"|[ \t]{0,3}[\[({<][ \t]{0,3}(?:at|dot)[ \t]{0,3}[\])}>][ \t]{0,3}"  # ana [at] example (dot) com
    # Spelled out: the words at and dot where an address's shape follows (ana at example dot
    # com; an at needs its domain spelled with dot and ending in a country's code or a common
    # top-level name, so "we are at booking.com" and "at home dot later" stay prose),
    # an @ with spaces about it (ana @ example.com), and digits spaced one by one.
    r"|(?<=\w)[ \t]{1,3}at[ \t]{1,3}"
    r"(?=(?:[^\W_][\w-]{0,62}[ \t]{1,3}dot[ \t]{1,3}){1,4}"
    r"(?:[a-z]{2}|com|org|net|edu|gov|mil|int|info|biz|name|mobi|pro|app|dev|xyz|online|site"
    r"|tech|email|mail|cloud|shop|store)(?![\w-]))"
    r"|(?<=\w)[ \t]{1,3}dot[ \t]{1,3}(?=[^\W_])"
    r"|(?<=\w)(?:[ \t]{1,3}@[ \t]{0,3}|@[ \t]{1,3})(?=[^\W_])"
    r"|(?<![0-9])[0-9](?:[ \t][0-9]){6,18}(?![0-9])",
    re.IGNORECASE,
)
_ESCAPE_STARTS = ("%", "&", "\\", "[", "(", "{", "<")
"""A character every written escape holds."""
_SPELLED = re.compile(r"[ \t](?:at|dot)[ \t]|[ \t]@|@[ \t]|[0-9][ \t][0-9]", re.IGNORECASE)
"""What every spelled-out form holds: a text with none of these and none of
:data:`_ESCAPE_STARTS` is not scanned."""
_MAY_ESCAPE = re.compile(
    "[" + re.escape("".join(_ESCAPE_STARTS)) + "]|" + _SPELLED.pattern, re.IGNORECASE
)
"""Either, in one scan."""
MAX_UNESCAPE_PASSES = 3
"""Escapes read inside escapes (``%2540`` is ``%40`` is ``@``), at most this deep."""


def escaped(text: str) -> bool:
    """Whether ``text`` may hold an escape :func:`unescape` reads."""
    return _MAY_ESCAPE.search(text) is not None and _ESCAPE.search(text) is not None


def _unescaped(m: re.Match[str]) -> str | None:
    """What one escape stands for (normalised as :func:`normalise` reads it), or ``None``."""
    t = m.group()
    if t.startswith("%"):
        raw = bytes.fromhex(t.replace("%", ""))
        decoded = raw.decode("utf-8", errors="replace")
    elif t.startswith("&#"):
        body = t[2:].rstrip(";")
        try:
            code = int(body[1:], 16) if body[:1] in "xX" else int(body)
            decoded = chr(code)
        except (ValueError, OverflowError):
            return None
    elif t.startswith("\\"):
        try:
            decoded = json.loads(f'"{t}"') if t[1] in "uU" else chr(int(t[2:], 16))
        except ValueError:
            return None
        # Tag characters escaped (surrogate pairs): read as the ASCII they mirror, as a model
        # reads them; unescaped, the text would drop them as characters drawn as nothing.
        decoded = decoded.translate(TAG_ASCII)
    elif t.startswith("&"):
        decoded = html.entities.html5.get(t[1:]) or ""
        if not decoded:
            return None
    elif t[0].isdigit():
        decoded = t.replace(" ", "").replace("\t", "")
    else:
        word = t.strip().strip("[](){}<>").strip().lower()
        if word in ("at", "@") and t[:1] in " \t" and _word_before(m) in _NOT_A_NAME:
            return None  # "booked it at expedia dot com", "meet @ noon.Tomorrow"
        decoded = "@" if word in ("at", "@") else "."
    return normalise(decoded).text


_NOT_A_NAME = frozenset(
    "i me you he him she her it we us they them this that these those one someone everyone "
    "is am are was were be been being stay stayed staying stays meet meeting met see seen saw "
    "book booked booking buy bought shop shopped order ordered look looked arrive arrived "
    "work works worked working live lives lived find found sold available online here there "
    "up out off in on now today tonight tomorrow yesterday later soon back home only also "
    "just still even deal deals sale offer offers price prices".split()
)
"""Words before a spelled at (or an @ with spaces) that are prose, not a local part: what
follows is where something happens ("booked it at expedia dot com"), not an address."""
_LAST_WORD = re.compile(r"(\w+)[ \t]*$")


def _word_before(m: re.Match[str]) -> str:
    found = _LAST_WORD.search(m.string, max(0, m.start() - 40), m.start())
    return found.group(1).lower() if found else ""


def unescape(norm: Normalised) -> Normalised:
    """``norm`` with the escapes a URL or a page writes a value in read as what they stand for:
    percent-encoding (``4111%201111``, ``ana%40example.com``; UTF-8 runs too), HTML character
    references (``&#52;``, ``&#x40;``, ``&commat;``), the at and dot of an address written to
    dodge a reader (``ana [at] example (dot) com``, ``ana at example dot com``, ``ana @
    example.com``) and digits spaced one by one (``1 2 3 4 5 6 7 8 9``); escapes inside escapes up to
    :data:`MAX_UNESCAPE_PASSES` deep. Offsets still map to the original: every character an
    escape stands for maps to the whole escape. Linear in the text (one scan a pass)."""
    for _ in range(MAX_UNESCAPE_PASSES):
        if not escaped(norm.text):
            return norm
        once = _unescape_once(norm)
        if once is None:
            return norm
        norm = once
    return norm


def _unescape_once(norm: Normalised) -> Normalised | None:
    """One pass of :func:`unescape`; ``None`` where no escape stood for anything."""
    text = norm.text
    spend(len(text))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def keep(a: int, b: int) -> None:
        out.append(text[a:b])
        if norm.starts is None or norm.ends is None:
            starts.extend(range(a, b))
            ends.extend(range(a + 1, b + 1))
        else:
            starts.extend(norm.starts[a:b])
            ends.extend(norm.ends[a:b])

    last = 0
    for m in _ESCAPE.finditer(text):
        decoded = _unescaped(m)
        if decoded is None or decoded == m.group():
            continue
        keep(last, m.start())
        first, end = norm.span(m.start(), m.end())
        out.append(decoded)
        starts.extend([first] * len(decoded))
        ends.extend([end] * len(decoded))
        last = m.end()
    if not last:
        return None
    keep(last, len(text))
    return Normalised("".join(out), norm.original, tuple(starts), tuple(ends))
