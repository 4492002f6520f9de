"""The threads user-written synchronous code runs on: a plain-function guardrail, a ``def check``,
a sync classifier or validator.

Such code cannot be stopped: past its timeout the caller stops waiting (the check refuses), but
the function runs on until it returns, holding its thread. The pool is bounded, so runaway
calls take at most its threads and never a growing number; each one abandoned is logged, naming
its guardrail. When every thread is held by a call its caller abandoned, new work would wait
for ever: it is refused at once (:class:`Saturated`, fail closed, naming the guardrails holding
the threads) until one of them returns. A call whose turn never came before its caller gave up
never runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("duraguard")


class Saturated(RuntimeError):
    """Every thread for sync checks is held by a call that overran; this one is refused."""


@dataclass
class _Call:
    label: str
    started: float = field(default_factory=time.monotonic)
    abandoned: bool = False


class UserThreads:
    """A bounded pool for user-written sync code (see the module docstring)."""

    def __init__(self, size: int, *, name: str = "duraguard-check") -> None:
        self.size = size
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._running: dict[int, _Call] = {}

    def held(self) -> list[str]:
        """The labels of calls still running after their caller gave up on them."""
        with self._lock:
            return [c.label for c in self._running.values() if c.abandoned]

    async def run(self, label: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on a pool thread; raises :class:`Saturated` where no thread will free."""
        held = self.held()
        if len(held) >= self.size:
            names = ", ".join(sorted(set(held)))
            log.warning(
                "duraguard: %s refused: all %d threads for sync checks are held by calls that "
                "ran past their timeouts (%s)",
                label,
                self.size,
                names,
            )
            raise Saturated(
                f"all {self.size} threads for synchronous checks are held by calls that ran past "
                f"their timeouts and cannot be stopped ({names}); fix or make async the "
                "guardrails named, or restart the worker"
            )
        call = _Call(label)
        # The caller's context goes along: a deadline (``_deadline``) holds inside the thread.
        context = contextvars.copy_context()
        future: Future[Any] = self._pool.submit(context.run, self._body, call, fn, args)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not future.done():
                call.abandoned = True
                log.warning(
                    "duraguard: %s is still running after its caller stopped waiting (its "
                    "timeout): a synchronous function cannot be stopped, so it keeps a thread "
                    "until it returns (%d of %d held so)",
                    label,
                    len(self.held()),
                    self.size,
                )
            raise

    def _body(self, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        key = id(call)
        with self._lock:
            self._running[key] = call
        try:
            return fn(*args)
        finally:
            with self._lock:
                self._running.pop(key, None)
