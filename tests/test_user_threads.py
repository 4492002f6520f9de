"""User-written sync guardrails cannot be stopped, so the damage is bounded (issue 24, class 3):
they run on a fixed pool; each one that overruns is logged by name; once every thread is held
by one, new sync checks are refused at once naming them; a call whose turn never came does not
run after its caller gave up."""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from duraguard._threads import UserThreads
from duraguard._types import Subject, Verdict
from duraguard.engine import evaluate
from duraguard.guardrail import guardrail


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[UserThreads]:
    small = UserThreads(2, name="test-user-code")
    monkeypatch.setattr(importlib.import_module("duraguard.guardrail"), "USER_THREADS", small)
    yield small


class Spinner:
    """A sync guardrail that works until released, counting its steps."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.steps = 0

    def __call__(self, subject: Subject) -> bool:
        while not self.release.wait(0.001):
            self.steps += 1
        return True


async def _until(condition: Any, polls: int = 1000) -> bool:
    for _ in range(polls):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return False


async def test_overrunning_sync_guardrails_fill_the_pool_then_new_ones_are_refused_by_name(
    pool: UserThreads, caplog: pytest.LogCaptureFixture
) -> None:
    spinner = Spinner()
    spin = guardrail(spinner, name="spin", timeout=0.1)
    ran: list[str] = []
    healthy = guardrail(lambda s: ran.append("healthy") or True, name="healthy", timeout=5)
    try:
        with caplog.at_level(logging.WARNING, logger="duraguard"):
            for _ in range(2):
                result = await evaluate([spin], {"x": 1})
                assert (result.verdict.action, result.outcome) == ("deny", "partial")
                assert [d.rule for d in result.verdict.detections] == ["guardrail.timeout"]
        assert sum("guardrail 'spin' is still running" in r.message for r in caplog.records) == 2
        assert pool.held() == ["guardrail 'spin'", "guardrail 'spin'"]

        refused = await evaluate([healthy], {"x": 1})
        assert (refused.verdict.action, refused.outcome) == ("deny", "partial")
        assert [d.rule for d in refused.verdict.detections] == ["guardrail.saturated"]
        assert "all 2 threads" in (refused.verdict.reason or "")
        assert "guardrail 'spin'" in (refused.verdict.reason or "")
        assert ran == []  # refused before it ran: nothing queued behind the stuck ones

        async def quick(subject: Subject) -> Verdict:  # async code needs no thread
            return Verdict.allow()

        assert not (await evaluate([guardrail(quick, name="quick")], {"x": 1})).tripped
    finally:
        spinner.release.set()
    assert await _until(lambda: not pool.held())
    steps = spinner.steps
    assert not (await evaluate([healthy], {"x": 1})).tripped and ran == ["healthy"]
    assert spinner.steps == steps  # the released spinners returned; nothing keeps them going


async def test_a_sync_check_that_never_got_a_thread_never_runs(pool: UserThreads) -> None:
    gate = threading.Event()
    ran: list[str] = []

    def holds(subject: Subject) -> bool:
        gate.wait(30)
        return True

    def late(subject: Subject) -> bool:
        ran.append("late")
        return True

    slow = guardrail(holds, name="holds", timeout=30)
    first = asyncio.ensure_future(evaluate([slow], {"x": 1}))
    second = asyncio.ensure_future(evaluate([slow], {"x": 2}))
    try:
        assert await _until(lambda: _busy(pool) == 2)
        queued = await evaluate([guardrail(late, name="late", timeout=0.1)], {"x": 3})
        assert [d.rule for d in queued.verdict.detections] == ["guardrail.timeout"]
    finally:
        gate.set()
    assert not (await first).tripped and not (await second).tripped
    assert await _until(lambda: _busy(pool) == 0)
    assert ran == []  # its turn came after its caller gave up: it was dropped, not run late


def _busy(pool: UserThreads) -> int:
    return len(pool._running)
