"""Reading typed values out of what a person wrote: amounts, numbers in words, dates, ids, places.

Pure and deterministic: the workflow-side ledger uses it for provenance and the turn-reading
checks use it on the latest turn. It is a heuristic reader, tuned on ``tests/corpus/turns.jsonl``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ._dates import (
    _DAY_MONTH,
    _ISO_DATE,
    _MONTH,
    _MONTH_DAY,
    _MONTH_RANGE,
    _SLASH_DATE,
    month_number,
    norm_date,
)

ValueKind = str
"""``number``, ``date``, ``id``, ``email``, ``url``, ``channel`` or ``phone``."""

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "k": 1000}
_NUMBER_WORDS = {**_UNITS, **_TENS, "hundred": 100, "thousand": 1000, "million": 1_000_000}
EMAIL = re.compile(r"(?<![\w.+-])[\w.%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![\w-])")
URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>]+|\bwww\.[^\s\"'<>]+", re.I)
_SENTENCE = re.compile(r"(?<=[a-z0-9])\.[A-Z][a-z]+$")
"""A host run into the next sentence: ``www.our-company.com.They`` (a space left out)."""


def _unrun(address: str) -> str:
    """``address`` without the next sentence's first word run into it."""
    head = address.split("/", 1)[0]
    m = _SENTENCE.search(head)
    if m is None or "." not in head[: m.start()]:
        return address
    return head[: m.start()]


_CHANNEL = re.compile(r"(?<![\w#])#[A-Za-z][\w-]{1,79}")
_HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z][\w.-]{1,39}(?<![.])")
_PHONE = re.compile(r"(?<![\w+])\+\d[\d ().-]{6,18}\d")
_DAY_ONLY = re.compile(r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?" + _MONTH + ")", re.I)
_MONEY = re.compile(
    r"(?:(?P<cur>[$€£¥])\s?(?P<a>\d[\d,]*(?:\.\d+)?)(?P<ak>k\b)?)"
    r"|(?:\b(?P<b>\d[\d,]*(?:\.\d+)?)(?P<bk>k\b)?\s?(?:usd|eur|gbp|dollars?|euros?|pounds?|bucks)\b)"
    r"|(?:(?<![\w.])(?P<c>\d+(?:\.\d+)?)(?P<ck>k)\b)",
    re.I,
)
_ID = re.compile(
    r"(?<![\w-])#?(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]*[A-Za-z0-9]|(?<![\w#])#\d{2,}\b"
)
_NOT_ID = re.compile(
    r"(?i)q[1-4]|h[12]|v\d+(?:\.\d+)*|\d{1,2}(?:am|pm)|\d+(?:st|nd|rd|th)|[1-9]d|mp[34]|p2p"
)
"""Quarters, halves, versions, times and ordinals: written like ids, never one."""
_NUMBER = re.compile(r"(?<![\w.,])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)?")

SEND_VERBS = frozenset(
    {
        "send", "email", "e-mail", "mail", "post", "share", "forward", "message", "notify",
        "tweet", "publish", "reply", "dm", "text", "ping", "slack", "broadcast", "announce",
        "invite", "cc", "tell", "sms", "wire",
    }
)  # fmt: skip
"""Verbs that ask for something to leave the system (S1)."""

_SEND_VERB = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, SEND_VERBS), key=len, reverse=True)) + r")\b", re.I
)
_NOT_SEND = re.compile(r"\b(?:don'?t|do not|never|without|no need to)\s+(?:\w+\s+){0,2}?$", re.I)


@dataclass(frozen=True)
class Reading:
    """The typed values found in one text: kind -> normalised values, in order of appearance."""

    values: dict[ValueKind, tuple[str, ...]] = field(default_factory=dict)
    sends: bool = False
    """Whether the text asks for something to be sent out."""

    def of(self, kind: ValueKind) -> tuple[str, ...]:
        return self.values.get(kind, ())

    def all(self) -> set[str]:
        return {v for vs in self.values.values() for v in vs}

    def destinations(self) -> tuple[str, ...]:
        return (*self.of("email"), *self.of("url"), *self.of("channel"), *self.of("phone"))


def norm_number(x: float | int | str) -> str | None:
    """A number's canonical text: ``20``, ``20.5``; ``None`` where it is not a number."""
    if isinstance(x, bool):
        return None
    if isinstance(x, str):
        t = x.strip().replace(",", "").lstrip("$€£¥").strip()
        if not t or len(t) > 40:
            return None
        try:
            x = float(t)
        except ValueError:
            return None
    try:
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    if f != f or f in (float("inf"), float("-inf")):
        return None
    return str(int(f)) if f.is_integer() else repr(round(f, 6))


def norm_id(text: str) -> str:
    return text.strip().lstrip("#").lower()


class _Spans:
    """Spans already read, as a mask: whether a position is inside one is one lookup."""

    __slots__ = ("mask",)

    def __init__(self, size: int) -> None:
        self.mask = bytearray(size + 1)

    def append(self, span: tuple[int, int]) -> None:
        start, end = span
        self.mask[start:end] = b"\x01" * (end - start)


def _inside(pos: int, spans: _Spans) -> bool:
    return 0 <= pos < len(spans.mask) and spans.mask[pos] == 1


def _words_to_numbers(text: str, taken: _Spans) -> list[tuple[int, str]]:
    """Numbers written as words: ``twenty``, ``one hundred and fifty``, ``2.5k`` stays digits."""
    found: list[tuple[int, str]] = []
    words = [(m.start(), m.end(), m.group(0).lower()) for m in _WORD.finditer(text)]
    i = 0
    while i < len(words):
        s, _, w = words[i]
        parts = w.split("-")
        if not all(p in _NUMBER_WORDS for p in parts) or _inside(s, taken):
            i += 1
            continue
        total, current, j, start = 0, 0, i, s
        while j < len(words):
            w2 = words[j][2]
            if (
                w2 == "and"
                and current
                and j + 1 < len(words)
                and words[j + 1][2].split("-")[0] in _NUMBER_WORDS
            ):
                j += 1
                continue
            ps = w2.split("-")
            if not all(p in _NUMBER_WORDS for p in ps):
                break
            for p in ps:
                if p in _UNITS or p in _TENS:
                    current += _UNITS.get(p, 0) + _TENS.get(p, 0)
                elif p == "hundred":
                    current = max(current, 1) * 100
                else:
                    total += max(current, 1) * _SCALES[p]
                    current = 0
            j += 1
        found.append((start, str(total + current)))
        i = j
    return found


def read(text: str) -> Reading:
    """Every typed value in ``text``, each span read once (most specific kind first).

    Cached: every call made in answer to one turn reads that same turn.
    """
    return _read(text[:4000] if isinstance(text, str) else str(text)[:4000])


@lru_cache(maxsize=1024)
def _read(text: str) -> Reading:  # noqa: C901  (one pass over the text: a branch per kind of value it reads, kept together so each span is claimed once)
    taken = _Spans(len(text))
    out: dict[str, list[tuple[int, str]]] = {}

    def add(kind: str, start: int, end: int, value: str | None) -> None:
        if value is None or _inside(start, taken):
            return
        taken.append((start, end))
        out.setdefault(kind, []).append((start, value))

    for m in EMAIL.finditer(text):
        add("email", m.start(), m.end(), m.group(0).lower())
    for m in URL.finditer(text):
        add("url", m.start(), m.end(), _unrun(m.group(0)).rstrip(".,;:!?)").lower())
    for m in _PHONE.finditer(text):
        add("phone", m.start(), m.end(), "+" + re.sub(r"\D", "", m.group(0)))
    for m in _ISO_DATE.finditer(text):
        add("date", m.start(), m.end(), norm_date(int(m[1]), int(m[2]), int(m[3])))
    for m in _SLASH_DATE.finditer(text):
        a, b, y = int(m[1]), int(m[2]), int(m[3])
        add("date", m.start(), m.end(), norm_date(y, b, a) if a > 12 else norm_date(y, a, b))
    for m in _MONTH_RANGE.finditer(text):  # "May 13 to 17": the second day in the same month
        month, in_year = month_number(m[1]), int(m[4]) if m[4] else 0
        if _inside(m.start(), taken):
            continue
        for d, at in ((int(m[2]), m.start()), (int(m[3]), m.start(3))):
            iso = norm_date(in_year, month, d) if in_year else f"--{month:02d}-{d:02d}"
            if 1 <= d <= 31 and iso is not None:
                out.setdefault("date", []).append((at, iso))
        taken.append((m.start(), m.end()))
    for pat, day_first in ((_DAY_MONTH, True), (_MONTH_DAY, False)):
        for m in pat.finditer(text):
            day, mon = (m[1], m[2]) if day_first else (m[2], m[1])
            year = int(m[3]) if m[3] else 0
            value = (
                norm_date(year, month_number(mon), int(day))
                if year
                else f"--{month_number(mon):02d}-{int(day):02d}"
            )
            if 1 <= int(day) <= 31:
                add("date", m.start(), m.end(), value)
    for m in _DAY_ONLY.finditer(text):
        if 1 <= int(m[1]) <= 31:
            add("date", m.start(), m.end(), f"---{int(m[1]):02d}")
    for m in _CHANNEL.finditer(text):
        add("channel", m.start(), m.end(), m.group(0).lower())
    for m in _HANDLE.finditer(text):
        add("channel", m.start(), m.end(), m.group(0).lower())
    for m in _MONEY.finditer(text):
        raw = m.group("a") or m.group("b") or m.group("c")
        n = norm_number(raw)
        if n is not None and (m.group("ak") or m.group("bk") or m.group("ck")):
            n = norm_number(float(n) * 1000)
        add("number", m.start(), m.end(), n)
    for m in _ID.finditer(text):
        if not _NOT_ID.fullmatch(m.group(0)):
            add("id", m.start(), m.end(), norm_id(m.group(0)))
    for m in _NUMBER.finditer(text):
        add("number", m.start(), m.end(), norm_number(m.group(0)))
    for start, value in _words_to_numbers(text, taken):
        out.setdefault("number", []).append((start, value))
    values = {k: tuple(dict.fromkeys(v for _, v in sorted(vs))) for k, vs in out.items()}
    return Reading(values=values, sends=asks_to_send(text))


def asks_to_send(text: str) -> bool:
    """Whether ``text`` asks for something to be sent out (a sending verb, not negated)."""
    text = URL.sub(" ", EMAIL.sub(" ", text))  # "mail" in new@mail.com is not a verb
    for m in _SEND_VERB.finditer(text):
        word = m.group(1).lower()
        before = text[max(0, m.start() - 30) : m.start()]
        if _NOT_SEND.search(before):
            continue
        if word in (
            "text",
            "message",
            "post",
            "mail",
            "email",
            "cc",
            "wire",
            "tell",
        ) and _used_as_noun(text, m):
            continue
        return True
    return False


_DETERMINERS = re.compile(
    r"\b(?:the|a|an|this|that|my|your|his|her|their|our|its|of|in|from|as|by)\s+$", re.I
)


def _used_as_noun(text: str, m: re.Match[str]) -> bool:
    """``the text``, ``a message``, ``in the post``, ``an email address``: not a request to send."""
    before = text[max(0, m.start() - 12) : m.start()]
    after = text[m.end() : m.end() + 10].lower()
    if _DETERMINERS.search(before) or re.search(r"\b(?:text|e-?mail|sms)\s+$", before, re.I):
        return True  # "the text", "a text message"
    return after.startswith((" address", " id", " body", " field", " message", " thread"))


def value_kind(name: str, value: Any, schema: dict[str, Any] | None = None) -> ValueKind | None:
    """What kind of value a call's field holds, from its name, its schema and the value itself."""
    fmt = (schema or {}).get("format", "") if isinstance(schema, dict) else ""
    key = name.lower()
    if fmt in ("email", "idn-email"):
        return "email"
    if fmt in ("uri", "iri", "uri-reference"):
        return "url"
    if fmt in ("date", "date-time"):
        return "date"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and (key == "id" or key.endswith(("_id", "_ref"))):
        return "id"  # a record's number says which record, not how much
    if isinstance(value, int | float):
        return "number"
    if not isinstance(value, str):
        return None
    v = value.strip()
    if EMAIL.fullmatch(v):
        return "email"
    if URL.fullmatch(v):
        return "url"
    if _ISO_DATE.fullmatch(v[:10]) and (len(v) == 10 or v[10:11] in ("T", " ")):
        return "date"
    if key in ("channel", "room", "to_channel") or _CHANNEL.fullmatch(v):
        return "channel"
    if norm_number(v) is not None and any(
        w in key for w in ("amount", "total", "price", "sum", "qty", "quantity", "count")
    ):
        return "number"
    if (
        " " not in v
        and len(v) <= 64
        and (key == "id" or key.endswith(("_id", "id", "_ref", "_number", "sku")))
    ):
        return "id"
    if " " not in v and _ID.fullmatch(v):
        return "id"
    return None


def normalise(kind: ValueKind, value: Any) -> str | None:
    """A call's value in the form :func:`read` gives the same kind of value in."""
    if kind == "number":
        return norm_number(value)
    if kind == "date":
        return str(value).strip()[:10]
    if kind == "id":
        return norm_id(str(value))
    if kind == "url":
        return str(value).strip().rstrip("/").lower()
    if kind == "phone":
        return "+" + re.sub(r"\D", "", str(value))
    return str(value).strip().lower()


def same(kind: ValueKind, call_value: str, said: str) -> bool:
    """Whether a call's normalised value is the one the person said (dates without a year match
    any year; URLs match with or without a trailing slash)."""
    if kind == "date" and said.startswith("---"):
        return call_value[8:10] == said[3:]  # "the 10th": a day of any month
    if kind == "date" and said.startswith("--"):
        return call_value[4:] == said[1:]
    if kind == "url":
        return call_value.rstrip("/") == said.rstrip("/")
    if kind == "channel":
        return call_value.lstrip("#@") == said.lstrip("#@")
    return call_value == said
