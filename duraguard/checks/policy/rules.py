"""Your rules: a YAML rule sheet of conditions, limits per period and spending limits.

A sheet looks like this (every key is explained in ``docs/policy.md``)::

    rules:
      - name: refunds over 100 need a manager
        tool: refund_card
        when:
          - arg: amount
            gt: 100
        then: ask            # refuse | ask | allow
        role: manager
    limits:
      - name: at most 3 refunds an hour
        tool: refund_card
        count: 3
        per: 1h
    spending:
      - name: refunds at most 500 a day
        tool: [refund_card, pay]
        field: amount
        max: 500
        per: 1d
        then: ask
        role: manager

A sheet that cannot be read is refused when it is loaded, with its line and the fix
(:class:`duraguard.errors.RuleSheetError`).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ..._ledger import MAX_SUM_FIELDS
from ..._reading import norm_number
from ..._types import LedgerEntry, SessionView

Then = Literal["refuse", "ask", "allow"]
OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "not_in", "matches", "contains", "exists")
SUBJECTS = ("arg", "result", "usage", "kind", "agent", "principal")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_STRICTNESS = {"allow": 0, "ask": 1, "refuse": 2}


@dataclass(frozen=True)
class Condition:
    """One test: a subject (an argument, an earlier result, usage, ...), an operator, a value."""

    subject: str
    target: str
    field: str | None
    op: str
    value: Any
    line: int


@dataclass(frozen=True)
class Rule:
    """One rule of a sheet: the tools it is about, its conditions, and what it does."""

    name: str
    tools: tuple[str, ...]
    when: tuple[Condition, ...]
    then: Then
    role: str | None
    reason: str | None
    line: int


@dataclass(frozen=True)
class Limit:
    """At most ``count`` calls, or a ``sum`` of one argument at most ``max``, per window."""

    name: str
    tools: tuple[str, ...]
    count: int | None
    field: str | None
    max: float | None
    per: float | None
    then: Then
    role: str | None
    line: int


@dataclass(frozen=True)
class Hit:
    """A rule or limit that applies to the call."""

    name: str
    then: Then
    role: str | None
    reason: str
    line: int


@dataclass(frozen=True)
class Facts:
    """What a rule may read of one call: tool, arguments, kind, who, and the session view."""

    tool: str
    args: Mapping[str, Any]
    kind: str
    agent: str | None
    principal: str | None
    session: SessionView


class Unknown(Exception):
    """A condition the view does not hold enough of the session to decide."""


def strictest(hits: list[Hit]) -> Hit | None:
    """The hit that decides: refuse over ask over allow; the first in the sheet among equals."""
    best: Hit | None = None
    for h in hits:
        if best is None or _STRICTNESS[h.then] > _STRICTNESS[best.then]:
            best = h
    return best


@lru_cache(maxsize=8192)
def _matches(patterns: tuple[str, ...], tool: str) -> bool:
    return any(p == tool or fnmatch.fnmatchcase(tool, p) for p in patterns)


# -- evaluating --------------------------------------------------------------------------------


def _lookup(value: Any, path: str) -> tuple[bool, Any]:
    cur = value
    for part in path.split(".") if path else ():
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False, None
    return True, cur


def _latest(session: SessionView, tool: str) -> LedgerEntry | None:
    for e in reversed(session.entries):
        if e.tool == tool and e.ran:
            return e
    return None


def _read(c: Condition, facts: Facts) -> tuple[bool, Any]:
    if c.subject == "arg":
        return _lookup(facts.args, c.target)
    if c.subject == "result":
        entry = _latest(facts.session, c.target)
        if entry is None:
            if facts.session.tool_counts.get(c.target, 0):
                raise Unknown(f"the last result of {c.target} is not in the session view")
            return False, None
        return _lookup(entry.result_fields, c.field or "")
    if c.subject == "usage":
        return True, facts.session.tool_counts.get(c.target, 0)
    if c.subject == "kind":
        return True, facts.kind
    if c.subject == "agent":
        return facts.agent is not None, facts.agent
    return facts.principal is not None, facts.principal


def _num(v: Any, c: Condition) -> float:
    n = norm_number(v) if isinstance(v, int | float | str) else None
    if n is None:
        raise Unknown(f"{c.subject} {c.target!r} is {v!r}, not a number")
    return float(n)


def _test(c: Condition, facts: Facts) -> bool:
    present, v = _read(c, facts)
    if c.op == "exists":
        return present is bool(c.value)
    if not present:
        return c.op in ("ne", "not_in")
    if c.op in ("gt", "gte", "lt", "lte"):
        a, b = _num(v, c), float(c.value)
        return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[c.op]
    if c.op in ("eq", "ne"):
        equal = _equal(v, c.value)
        return equal if c.op == "eq" else not equal
    if c.op in ("in", "not_in"):
        inside = any(_equal(v, x) for x in c.value)
        return inside if c.op == "in" else not inside
    if c.op == "matches":
        return isinstance(v, str) and re.search(c.value, v) is not None
    if isinstance(v, str):
        return str(c.value).lower() in v.lower()
    return isinstance(v, list) and any(_equal(x, c.value) for x in v)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    na = norm_number(a) if isinstance(a, int | float) else None
    nb = norm_number(b) if isinstance(b, int | float) else None
    if na is not None and nb is not None:
        return na == nb
    return bool(a == b)


def _visible(limit: Limit, facts: Facts) -> list[LedgerEntry]:
    s = facts.session
    start = s.now - limit.per if limit.per is not None else float("-inf")
    picked: list[LedgerEntry] = []
    for tool, total in s.tool_counts.items():
        if not _matches(limit.tools, tool) or total <= 0:
            continue
        seen = [e for e in s.entries if e.tool == tool and e.ran]
        if len(seen) < total and (not seen or seen[0].at > start):
            raise Unknown(
                f"{total - len(seen)} earlier calls of {tool} are outside the session view and may fall in the window"
            )
        picked.extend(e for e in seen if e.at > start)
    return picked


def _over(limit: Limit, facts: Facts) -> str:
    per = f" per {_span(limit.per)}" if limit.per is not None else " in this session"
    if limit.count is not None:
        if limit.per is None:
            done = sum(n for t, n in facts.session.tool_counts.items() if _matches(limit.tools, t))
        else:
            done = len(_visible(limit, facts))
        if done + 1 > limit.count:
            return f"{done} calls already made; at most {limit.count}{per}"
        return ""
    if limit.field is None or limit.max is None:
        raise Unknown("the limit has neither count nor sum")
    present, mine = _lookup(facts.args, limit.field)
    amount = (
        _num(mine, Condition("arg", limit.field, None, "sum", None, limit.line)) if present else 0.0
    )
    spent = _spent(limit, facts)
    if spent + amount > limit.max:
        return f"{spent:g} already spent + {amount:g} now is over {limit.max:g}{per}"
    return ""


def _spent(limit: Limit, facts: Facts) -> float:
    sums = facts.session.sums
    if limit.field is None:
        raise Unknown("the limit names no field")
    if limit.per is None and sums and "." not in limit.field:
        total = 0.0
        for tool, by_field in sums.items():
            if not (_matches(limit.tools, tool) and isinstance(by_field, Mapping)):
                continue
            if limit.field not in by_field and len(by_field) >= MAX_SUM_FIELDS:
                # The ledger stops adding argument names past its cap: a total it may never
                # have started cannot be read as zero.
                raise Unknown(
                    f"the session keeps no running total of {limit.field!r} for {tool!r} "
                    f"(it had {MAX_SUM_FIELDS} other argument names already)"
                )
            total += float(by_field.get(limit.field, 0) or 0)
        return _finite(total, limit.field)
    total = 0.0
    for e in _visible(limit, facts):
        present, v = _lookup(e.args, limit.field)
        if present:
            n = norm_number(v) if isinstance(v, int | float | str) else None
            if n is None:
                raise Unknown(f"call {e.index} has {limit.field}={v!r}, not a number")
            total += float(n)
    return _finite(total, limit.field)


def _finite(total: float, field: str) -> float:
    """A total that a comparison can decide on: one past what a float holds (or made of such
    totals of both signs, which is no number) cannot be read as under a limit."""
    if not math.isfinite(total):
        raise Unknown(f"the total of {field!r} is beyond what a number holds")
    return total


def _span(seconds: float) -> str:
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# -- parsing, with lines -----------------------------------------------------------------------
