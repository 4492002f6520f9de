"""How long a check may work, and how much work it did.

The engine gives every guardrail run a deadline (its ``timeout``). duraguard's own content
checks read it as they go: they work in bounded steps (a window of text, a candidate match, a
subschema) and call :func:`spend` between steps, which raises :class:`Overrun` once the deadline
has passed. So a check that overruns stops where it is, on whatever thread it runs, instead of
being abandoned there: a thread cannot be stopped from outside, but it can stop itself.

The deadline travels in a context variable, which ``asyncio.to_thread`` copies into the
thread. Code that runs with no deadline (a check called directly, workflow code) only counts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


class Overrun(TimeoutError):
    """A check ran past its deadline and stopped (a :class:`TimeoutError`: the engine refuses
    with ``guardrail.timeout``)."""

    def __init__(self, seconds: float | None) -> None:
        within = f" of {seconds:g}s" if seconds is not None else ""
        super().__init__(f"the check ran past its deadline{within} and stopped where it was")


@dataclass
class Work:
    """One deadline and the work done under it."""

    ends: float | None
    """``time.monotonic()`` past which :func:`spend` raises; ``None``: no deadline."""
    seconds: float | None = None
    steps: int = 0
    """Units of work spent: characters handed to a scanner, candidates examined, subschemas."""
    held: list[Any] = field(default_factory=list)
    """What the check may have taken while it worked (a budget hold under way): a refusal for
    running past the deadline carries it, for the loop to give back (:func:`taking`)."""


_CURRENT: ContextVar[Work | None] = ContextVar("duraguard_work", default=None)
_TOTAL = [0]


@contextmanager
def within(seconds: float | None) -> Iterator[Work]:
    """Run the block with a deadline ``seconds`` from now (``None``: count only). An enclosing
    deadline that ends sooner still holds; the block's steps count toward it too."""
    outer = _CURRENT.get()
    ends = None if seconds is None else time.monotonic() + seconds
    if outer is not None and outer.ends is not None and (ends is None or outer.ends < ends):
        ends, seconds = outer.ends, outer.seconds
    work = Work(ends, seconds)
    token = _CURRENT.set(work)
    try:
        yield work
    finally:
        _CURRENT.reset(token)
        if outer is not None:
            outer.steps += work.steps
            outer.held.extend(work.held)


def spend(units: int = 1) -> None:
    """Count ``units`` of work; raise :class:`Overrun` where the deadline has passed."""
    _TOTAL[0] += units
    work = _CURRENT.get()
    if work is None:
        return
    work.steps += units
    if work.ends is not None and time.monotonic() > work.ends:
        raise Overrun(work.seconds)


def taking(item: Any) -> None:
    """Say that the check may take ``item`` (a reservation) from here on: if it runs past its
    deadline, the engine's refusal carries ``item``, so what an answer that came too late took
    is given back. Outside any deadline, nothing."""
    work = _CURRENT.get()
    if work is not None:
        work.held.append(item)


def total() -> int:
    """Every unit spent in this process so far, on any thread (approximate: a count made from
    several threads at once may lose a few; it never moves when no check is working)."""
    return _TOTAL[0]
