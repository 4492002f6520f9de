"""Dates in text: written out (ISO, d/m/y, "22 May", "May 13 to 17") and said relative to today.

Pure and deterministic, like :mod:`duraguard._reading`, which reads them with every other kind of
value; :func:`dates_in` is the cheap reader of dates alone, for long tool results.
"""

from __future__ import annotations

import re

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
    if not _DATE_HINT.search(text):
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
    Monday", "in 3 days", "next week" (its seven days). A weekday alone is its next
    occurrence (today included); "next <weekday>" is also read as the one a week after, as
    people use it both ways."""
    from datetime import date, timedelta

    try:
        base = date.fromisoformat(today[:10])
    except ValueError:
        return set()
    out: set[str] = set()
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
