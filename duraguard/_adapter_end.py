"""How a guarded agent run ends, whatever framework drove it: a :class:`GuardedRun`, the
:class:`~duraguard.errors.RunStopped` found behind what a framework wrapped it in, and a refused
final answer corrected where the framework's own loop cannot ask again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._types import StopReason
from ._wire import AuditRow
from .errors import ConfigurationError, RunStopped

R = TypeVar("R")
E = TypeVar("E", bound=BaseException)


def found_in(err: BaseException, kind: type[E]) -> E | None:
    """The ``kind`` behind ``err``: itself, or a cause the framework wrapped it in."""
    seen: set[int] = set()
    found: BaseException | None = err
    while found is not None and id(found) not in seen:
        if isinstance(found, kind):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


def stopped_in(err: BaseException) -> RunStopped | None:
    """The :class:`RunStopped` behind ``err``: itself, or a cause the framework wrapped it in."""
    return found_in(err, RunStopped)


def refused_in(err: BaseException) -> None:
    """Raise the :class:`ConfigurationError` behind ``err`` (a framework that wraps what its
    callbacks raise would make a refusal a retried workflow task, not the run's failure)."""
    refused = found_in(err, ConfigurationError)
    if refused is not None and refused is not err:
        raise refused from None


@dataclass(frozen=True)
class GuardedRun(Generic[R]):
    """How a guarded agent run ended, whatever framework drove it (what ``run()`` returns)."""

    stop_reason: StopReason
    """``done``; ``guardrail`` (a halt, a refused prompt, a tripwire of the framework's own, or
    a tool duraguard could not judge); ``no-answer`` (the final answer was refused);
    ``max-iterations`` (the framework's turn limit)."""
    output: Any = None
    """The final output, as the guardrails left it (masked where one masked it), in the
    framework's output type where it fits."""
    halted_by: str | None = None
    """The guardrail that ended the run (``openai-agents:<name>`` for a framework's own)."""
    note: str | None = None
    """Why the run ended, when that is not plain."""
    verdicts: tuple[AuditRow, ...] = ()
    """The session's audit rows that did something (the last 200; ``duraguard audit`` reads
    every one from history)."""
    result: R | None = None
    """The framework's own result when its run finished; when a guardrail (or a limit) stopped
    it, what the framework had made by then where it says (the OpenAI Agents SDK's
    ``RunErrorDetails``), else ``None``."""


async def corrected(
    attempt: Callable[[str | None], Awaitable[GuardedRun[Any]]],
    ended: Callable[[RunStopped], GuardedRun[Any]],
    max_corrections: int,
) -> GuardedRun[Any]:
    """A run whose refused final answer is corrected: ``attempt(None)``, then, where it stops
    with a refused answer (``no-answer``), ``attempt(correction)`` with duraguard's words to the
    model, ``max_corrections`` times; any other stop (a halt, a refused prompt) ends it at once
    (``ended``). For a framework whose own loop cannot ask for another answer."""
    correction: str | None = None
    tries = 0
    while True:
        try:
            return await attempt(correction)
        except Exception as err:
            stop = stopped_in(err)
            if stop is None:
                raise
            if stop.stop_reason != "no-answer" or tries >= max_corrections:
                return ended(stop)
            tries += 1
            correction = f"Your answer was not accepted: {stop.note}. Answer again."


__all__ = ["GuardedRun", "corrected", "found_in", "refused_in", "stopped_in"]
