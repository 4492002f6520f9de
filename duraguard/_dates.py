"""Dates in text: written out (ISO, d/m/y, "22 May", "May 13 to 17"), said relative to today
("next Monday", "Saturday 18th") or to another date ("two days before").

Pure and deterministic, like :mod:`duraguard._reading`, which reads them with every other kind of
value; :func:`dates_in` is the cheap reader of dates alone, for long tool results.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)

_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?(?:,?\s+(\d{{4}}))?\b", re.I
)
_MONTH_DAY = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.I
)
_MONTH_RANGE = re.compile(
    rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:to|-|–|until|till|through|thru)\s*"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*(?:{_MONTH}|:|am|pm|h\b))(?:,?\s+(\d{{4}}))?",
    re.I,
)


def norm_date(y: int, m: int, d: int) -> str | None:
    if not (1 <= m <= 12 and 1 <= d <= 31 and 1900 <= y <= 2200):
        return None
    return f"{y:04d}-{m:02d}-{d:02d}"


def month_number(name: str) -> int:
    return _MONTHS[name.lower()[:3]]


def dates_in(text: str) -> set[str]:
    """The dates a text writes (ISO, d/m/y, "22 May", "May 22", "May 13 to 17"), normalised as
    :func:`read` gives them: a cheap reader for long tool results."""
    if not _date_hint(text):
        return set()
    out: set[str] = set()
    for m in _ISO_DATE.finditer(text):
        d = norm_date(int(m[1]), int(m[2]), int(m[3]))
        if d:
            out.add(d)
    for m in _SLASH_DATE.finditer(text):
        a, b, y = int(m[1]), int(m[2]), int(m[3])
        d = norm_date(y, b, a) if a > 12 else norm_date(y, a, b)
        if d:
            out.add(d)
    for m in _MONTH_RANGE.finditer(text):
        nth = month_number(m[1])
        out.update(f"--{nth:02d}-{int(x):02d}" for x in (m[2], m[3]) if 1 <= int(x) <= 31)
    for pat, day_first in ((_DAY_MONTH, True), (_MONTH_DAY, False)):
        for m in pat.finditer(text):
            day_text, month_text = (m[1], m[2]) if day_first else (m[2], m[1])
            nth, dd = month_number(month_text), int(day_text)
            if 1 <= dd <= 31:
                out.add(f"--{nth:02d}-{dd:02d}")
                full = norm_date(int(m[3]), nth, dd) if m[3] else None
                if full:
                    out.add(full)
    return out


_DATE_HINT = re.compile(rf"\d{{4}}-\d|\d/\d|{_MONTH}", re.I)
_ASCII_HINT = re.compile(
    r"[0-9]{4}-[0-9]|[0-9]/[0-9]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
)
""":data:`_DATE_HINT` for lower-case ASCII text: every spelling :data:`_MONTH` matches begins
with one of these stems, and an ASCII digit is the only one there is."""


def _date_hint(text: str) -> bool:
    """Whether ``text`` may hold a date, as :data:`_DATE_HINT` says: for ASCII text by a
    case-sensitive search of it lower-cased (the case-blind alternation costs about 0.1 µs a
    character, and tool results are long), for other text by the pattern itself (its case-blind
    match also takes letters such as the long s, which ``str.lower`` leaves be, and digits of
    other scripts)."""
    if not text.isascii():
        return _DATE_HINT.search(text) is not None
    return _ASCII_HINT.search(text.lower()) is not None


_WEEKDAY_DAY = re.compile(
    r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?\.?,?\s+(?:the\s+)?"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*(?:of\s+)?{_MONTH}|\s*[:.]\d|\s*(?:am|pm|h)\b)",
    re.I,
)
"""A weekday and a day of the month, no month: ``Saturday 18th``, ``Sat the 18th``."""
_WEEKDAY_INDEX = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}


def weekday_dates(text: str, day: str) -> set[str]:
    """ISO dates a text names by a weekday and a day of the month ("Saturday 18th", "Sat the
    18th"), read near ``day`` (ISO): the months from one before to three after it in which
    that day of the month falls on that weekday (mostly one)."""
    if not day or not _WEEKDAY_DAY.search(text):
        return set()
    try:
        base = date.fromisoformat(day[:10])
    except ValueError:
        return set()
    out: set[str] = set()
    for m in _WEEKDAY_DAY.finditer(text[:20000]):
        wd, dd = _WEEKDAY_INDEX[m[1].lower()], int(m[2])
        for shift in range(-1, 4):
            y, mo = divmod(base.month - 1 + shift, 12)
            try:
                found = date(base.year + y, mo + 1, dd)
            except ValueError:
                continue
            if found.weekday() == wd:
                out.add(found.isoformat())
    return out


_OFFSET = re.compile(
    r"\b(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|thirty)\s+"
    r"(days?|weeks?)\s+(before|after|later|earlier|prior|ahead|from)\b",
    re.I,
)
_NEAR = re.compile(
    r"\bthe\s+(?:(next|following|previous|prior)\s+(day|week)|(day|week)\s+(before|after))\b",
    re.I,
)
_SPAN = re.compile(
    r"\bfor\s+(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|thirty)\s+"
    r"(nights?|days?|weeks?)\b",
    re.I,
)
"""A stay or a span from a day: "for 3 nights", "for two weeks"."""
_COUNT = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "fourteen": 14, "thirty": 30,
}  # fmt: skip
_BACK = frozenset({"before", "earlier", "prior", "previous"})


def offsets(text: str) -> set[int]:
    """The day offsets a text says relative to another date: "two days before" (-2), "a week
    after" (+7), "the day before" (-1), "the following day" (+1), "3 days later" (+3), "for
    3 nights" (+3: the day a stay ends)."""
    out: set[int] = set()
    for m in _OFFSET.finditer(text[:4000]):
        n = int(m[1]) if m[1].isdigit() else _COUNT[m[1].lower()]
        n *= 7 if m[2].lower().startswith("week") else 1
        if 0 < n <= 366:
            out.add(-n if m[3].lower() in _BACK else n)
    for m in _SPAN.finditer(text[:4000]):
        n = int(m[1]) if m[1].isdigit() else _COUNT[m[1].lower()]
        n *= 7 if m[2].lower().startswith("week") else 1
        if 0 < n <= 366:
            out.add(n)
    for m in _NEAR.finditer(text[:4000]):
        unit, way = (m[2], m[1]) if m[1] else (m[3], m[4])
        n = 7 if unit.lower() == "week" else 1
        out.add(-n if way.lower() in _BACK else n)
    return out


# -- dates said relative to today -----------------------------------------------------------------

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|day after tomorrow|(?:(next|this|coming|on)\s+)?"
    r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in (\d+|a|one|two|three) (days?|weeks?)"
    r"|next week)\b",
    re.I,
)
_SMALL = {"a": 1, "one": 1, "two": 2, "three": 3}


def relative_dates(text: str, today: str) -> set[str]:
    """ISO dates a text names relative to ``today`` (ISO): "tomorrow", "on Friday", "next
    Monday", "in 3 days", "next week" (its seven days), "Saturday 18th" (:func:`weekday_dates`).
    A weekday alone is its next occurrence (today included); "next <weekday>" is also read as
    the one a week after, as people use it both ways."""
    try:
        base = date.fromisoformat(today[:10])
    except ValueError:
        return set()
    out: set[str] = weekday_dates(text, today)
    for m in _RELATIVE.finditer(text):
        word = m.group(1).lower()
        if word in ("today", "tonight"):
            out.add(base.isoformat())
        elif word == "tomorrow":
            out.add((base + timedelta(days=1)).isoformat())
        elif word == "yesterday":
            out.add((base - timedelta(days=1)).isoformat())
        elif word == "day after tomorrow":
            out.add((base + timedelta(days=2)).isoformat())
        elif word == "next week":
            start = base + timedelta(days=7 - base.weekday())
            out.update((start + timedelta(days=i)).isoformat() for i in range(7))
        elif m.group(3):
            ahead = (_WEEKDAYS.index(m.group(3).lower()) - base.weekday()) % 7
            day = base + timedelta(days=ahead)
            out.add(day.isoformat())
            if (m.group(2) or "").lower() == "next":
                out.add((day + timedelta(days=7)).isoformat())
        elif m.group(4):
            n = int(m.group(4)) if m.group(4).isdigit() else _SMALL[m.group(4).lower()]
            out.add(
                (base + timedelta(days=n * (7 if m.group(5).startswith("week") else 1))).isoformat()
            )
    return out
