"""Values the agent worked out from given ones: a sum, a difference, a share, a date some days on.

Pure and deterministic (it runs inside workflow code). Grounding asks about a value of a write
that nobody said and no tool returned; a value worked out from values that were said or
returned is, arguably, said: the difference between what a friend sent and what dinner cost,
the rent raised by the amount a notice gives, a price with the VAT rate the person named, the
day before an event a tool returned. :func:`sums` and :func:`shifted` find such a working for a
call's value among the numbers and dates of the person's latest turn and of the results of the
calls made since it (:class:`Basis`); the view names each working with the sources of its
operands, and grounding accepts it only where every operand's source would ground a value of
its own (the person, a trusted result, content the person pointed at).

What is worked out is narrow on purpose: two operands, one operation (``a + b``, ``a - b``,
``a * p%``, ``a * (1 + p%)``, ``a * (1 - p%)``), or a date moved by an offset the turn itself
says ("two days before", "a week after"). A made-up value seldom matches one by chance, and
where it does, it is still made of values the person or their tools gave.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from ._provenance import _maybe_num, _prose, last_name, leaves

MAX_NUMBERS = 128
"""Numbers a working is looked for among, at most (the most recent sources first)."""
MAX_PER_SOURCE = 32
"""Numbers kept per source (a result's first ones: a listing's amounts, a letter's sums)."""
MAX_WORKINGS = 4
"""Workings the view names per value, at most."""


_AMOUNT = re.compile(
    r"(?<![\w.,:/-])(?:\d{1,3}(?:,\d{3})+|\d{1,12})(?:\.\d{1,2})?(?![\w-]|[.,:/]\d)"
)
"""A number in prose as an amount is written (``1,100.00``, ``8``): not a piece of a date, a
time, an id or a version (digits run into letters, hyphens, colons, slashes)."""


def is_id(path: str) -> bool:
    """Whether the field a JSON Pointer ends at names a record (``id``, ``order_id``)."""
    name = last_name(path).lower()
    return name in ("id", "id_") or name.endswith(("_id", "_ref", "_number"))


def as_float(x: float) -> float | None:
    """``x`` as a float; ``None`` for an integer past the largest float (JSON has no bound on
    one, and ``float()`` raises on it: nothing is worked out from it)."""
    try:
        return float(x)
    except OverflowError:
        return None


def numbers_in(value: Any) -> tuple[list[float], list[float]]:
    """The numbers a result holds that a value may be worked out from, ``(in prose, in
    fields)``, at most :data:`MAX_PER_SOURCE` each: amounts in its texts, its numeric fields and
    short texts that are numbers; never a field whose name says it is an id."""
    prose: list[float] = []
    fields: list[float] = []
    for path, leaf in leaves(value):
        if len(prose) >= MAX_PER_SOURCE and len(fields) >= MAX_PER_SOURCE:
            break
        t = type(leaf)
        if t is bool or leaf is None or is_id(path):
            continue
        if t is int or t is float:
            if (f := as_float(leaf)) is not None:
                fields.append(f)
            continue
        text = str(leaf)
        if _prose(text):
            prose.extend(float(m.replace(",", "")) for m in _AMOUNT.findall(text[:20000]))
        elif (n := _maybe_num(text.strip().lstrip("$€£¥"))) is not None:
            fields.append(float(n))
    return prose[:MAX_PER_SOURCE], fields[:MAX_PER_SOURCE]


@dataclass(frozen=True)
class Basis:
    """What a call's values may be worked out from: sources of the person's latest turn
    (``turn:i``, ``prompt``) and of the results of the calls made since (their indices), and
    the day offsets the turn says (``-1``: "the day before")."""

    turn: str = ""
    calls: frozenset[int] = frozenset()
    offsets: frozenset[int] = frozenset()
    days: frozenset[str] = frozenset()
    """Dates the turn says relative to the session's day ("next Monday"), as ISO dates: a
    date may be worked out from one ("two days after next Monday")."""

    def admits(self, source: str) -> bool:
        """Whether a value seen at ``source`` may be an operand."""
        if source == "prompt" or (self.turn and source == self.turn):
            return True
        parts = source.split(":")
        at = parts[1] if parts[0] == "result" else parts[2] if len(parts) > 2 else ""
        return at.isdigit() and int(at) in self.calls


LARGEST = 1e12
"""Numbers beyond this (or not finite) are no operands and have no working."""


def _plain(x: float) -> bool:
    return x == x and -LARGEST < x < LARGEST


def _shown(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def sums(value: float, pool: list[tuple[float, str]]) -> list[tuple[str, tuple[str, str]]]:
    """Workings of ``value`` from two numbers of ``pool`` (``(number, source)``):
    ``(expression, (source of a, source of b))``, at most :data:`MAX_WORKINGS`. Equal to the
    cent; ``a`` and ``b`` are two different numbers, a percentage is over 0 and at most 100."""
    if not _plain(value):
        return []
    by: dict[int, tuple[float, str]] = {}
    for x, source in pool:
        if _plain(x) and x != 0:
            by.setdefault(round(x * 100), (x, source))
    target = round(value * 100)
    out: list[tuple[str, tuple[str, str]]] = []
    for ca, (a, source_a) in by.items():  # value = a + b, value = a - b
        for cb, op in ((target - ca, "+"), (ca - target, "-")):
            if cb > 0 and cb != ca and ca != target and cb in by:
                out.append((f"{_shown(a)} {op} {_shown(by[cb][0])}", (source_a, by[cb][1])))
    for cp, (p, source_p) in by.items():  # value = a * p%, a * (1 + p%), a * (1 - p%)
        if not 0 < cp <= 10_000:
            continue
        for a, form in (
            (value * 100 / p, "{a} * {p}%"),
            (value / (1 + p / 100), "{a} * (1 + {p}%)"),
            (value / (1 - p / 100) if p < 100 else 0.0, "{a} * (1 - {p}%)"),
        ):
            found = by.get(round(a * 100)) if _plain(a) and a else None
            if (
                found is not None
                and found[0] != p
                and abs(_apply(form, found[0], p) - value) < 0.005
            ):
                out.append((form.format(a=_shown(found[0]), p=_shown(p)), (found[1], source_p)))
    out.sort(key=lambda w: sum(_rank(x) for x in w[1]))  # the person's and tools' first
    return list({w[1]: w for w in out}.values())[:MAX_WORKINGS]


def _rank(source: str) -> int:
    return (
        0
        if source == "prompt" or source.startswith("turn:")
        else 1
        if source.startswith("result:")
        else 2
    )


def _apply(form: str, a: float, p: float) -> float:
    if "(1 +" in form:
        return a * (1 + p / 100)
    if "(1 -" in form:
        return a * (1 - p / 100)
    return a * p / 100


def shifted(
    value: str, offsets: frozenset[int], where: Callable[[str], tuple[str, ...]]
) -> list[tuple[str, tuple[str, ...]]]:
    """Workings of the date ``value`` (ISO, a time after it allowed) as another date moved by
    one of ``offsets`` days: ``(expression, sources of that date)``; ``where`` gives the sources
    a date (ISO) was seen at."""
    try:
        day = date.fromisoformat(value[:10])
    except ValueError:
        return []
    out: list[tuple[str, tuple[str, ...]]] = []
    for n in sorted(offsets):
        base = (day - timedelta(days=n)).isoformat()
        seen = where(base)
        if seen:
            out.append((f"{base} {n:+d} days", seen))
    return out[:MAX_WORKINGS]
