"""Small numbers an order's words name without writing them as a number alone.

Pure and deterministic (it runs inside workflow code). "Delete file13", "the 13th file", "file
number thirteen" name 13 as surely as "file 13" does; the words of an order to act
(:mod:`duraguard._imperatives`) are keyed by them too, so a listed target an order picks that
way is not a "bare" number (:func:`duraguard.checks.policy.task._picked_by_content`).
"""

from __future__ import annotations

import re

_GLUED = re.compile(
    r"(?<![\w.@/\-])(?:[a-z]{1,16}[_#]?(\d{1,4})|(\d{1,4})(?:st|nd|rd|th))(?![\w@/\-]|\.\w)", re.I
)
"""A small number glued to a word in an order's words: ``file13``, ``doc_7``, ``13th``. The
order names that number as a target as surely as "file 13" does. Not in an address, a path or
a hyphenated token (``x3@evil.example``, ``v2/files``): those are read whole."""


_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DATED = re.compile(r"\b" + _MONTHS + r"\.?\s+\Z", re.I)
_OF_MONTH = re.compile(r"\s+(?:of\s+)?" + _MONTHS + r"\b", re.I)
"""A day of a month ("May 11th", "the 11th of May"): a date, not a target."""

_UNITS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen")  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SPELT: dict[str, int] = {w: i for i, w in enumerate(_UNITS) if i >= 2}
_SPELT.update({w: 10 + i for i, w in enumerate(_TEENS)})
for _t, _tens in enumerate(_TENS):
    _SPELT[_tens] = 20 + 10 * _t
    _SPELT.update({f"{_tens}-{u}": 20 + 10 * _t + i for i, u in enumerate(_UNITS) if i})
    _SPELT.update({f"{_tens} {u}": 20 + 10 * _t + i for i, u in enumerate(_UNITS) if i})
_SPELT_RE = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, _SPELT), key=len, reverse=True)) + r")\b", re.I
)
"""Numbers from two to ninety-nine in words ("file number thirteen"); not "one", which is said
of anything ("the old one")."""


def numbers_named(words: str) -> set[str]:
    """The numbers in ``words`` written glued to a word (:data:`_GLUED`) or in words
    (:data:`_SPELT_RE`), as numbers."""
    out = {
        str(int(m.group(1) or m.group(2)))
        for m in _GLUED.finditer(words)
        if not (m.group(2) and _DATED.search(words, max(0, m.start() - 12), m.start()))
        and not (m.group(2) and _OF_MONTH.match(words, m.end()))
    }
    out.update(str(_SPELT[m.group(0).lower()]) for m in _SPELT_RE.finditer(words))
    return out


__all__ = ["numbers_named"]
