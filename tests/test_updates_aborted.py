"""An update aborted by a failed workflow task is sent again, under its id (the budget's
reserves and settles, a person's decision and the preview of their edits).

Under load the dev server can refuse a workflow task whose cancel of a timer crossed the timer
firing (``BadCancelTimerAttributes``); an update that task held is aborted, never applied, and
the caller hears FAILED_PRECONDITION with a ``WorkflowNotReadyFailure``. The race cannot be made
on demand, so the errors here are the server's own, as its bytes carry them.
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from typing import Any

import pytest
from google.protobuf.any_pb2 import Any as AnyProto
from temporalio.api.common.v1 import GrpcStatus
from temporalio.api.errordetails.v1 import WorkflowNotReadyFailure
from temporalio.client import Interceptor, OutboundInterceptor, StartWorkflowUpdateInput
from temporalio.service import RPCError, RPCStatusCode

import duraguard._updates as _updates_module
from duraguard._updates import ABORTED_TRIES
from duraguard._updates import aborted as _aborted
from duraguard._updates import send_update as _update
from duraguard._wire import DECIDE

ABORT_MESSAGE = (
    "Unable to perform workflow execution update due to unexpected workflow task failure."
)


def _error(status: RPCStatusCode, detail: Any | None) -> RPCError:
    grpc = GrpcStatus(code=int(status), message=ABORT_MESSAGE)
    if detail is not None:
        packed = AnyProto()
        packed.Pack(detail)
        grpc.details.append(packed)
    return RPCError(ABORT_MESSAGE, status, grpc.SerializeToString())


def aborted() -> RPCError:
    return _error(RPCStatusCode.FAILED_PRECONDITION, WorkflowNotReadyFailure())


class AbortFirstDecision(Interceptor):
    """A client interceptor that answers the first decision update (``duraguard.decide``) with
    the server's abort, raised ``before`` the update reaches the server (never applied) or
    ``after`` (it was); records the update id of each one sent (the inbox's and the CLI's
    tests)."""

    def __init__(self, when: str) -> None:  # "before", "after" or "always" (never applied)
        self.when = when
        self.sent: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        owner = self

        class Outbound(OutboundInterceptor):
            async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
                if input.update != DECIDE:
                    return await super().start_workflow_update(input)
                owner.sent.append(input.update_id or "")
                if owner.when == "always" or (len(owner.sent) == 1 and owner.when == "before"):
                    raise aborted()
                handle = await super().start_workflow_update(input)
                if len(owner.sent) == 1:
                    raise aborted()
                return handle

        return Outbound(next)


class Entity:
    """Raises its ``errors`` one an update, then answers; records every id it was sent under."""

    def __init__(self, errors: list[BaseException]) -> None:
        self.errors = errors
        self.ids: list[str] = []

    async def execute_update(self, update: Any, req: Any, *, id: str) -> str:
        self.ids.append(id)
        if self.errors:
            raise self.errors.pop(0)
        return f"applied {req}"


@pytest.fixture(autouse=True)
def no_wait(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", sleep)  # the module _updates waits with
    return waits


def dropped() -> RPCError:
    """What the server answers where it dropped the run's updates in flight (its cache entry
    evicted, its workflow task lost) and its own retries ran out: seen under load in a full run
    of the suite, where a check's withdrawal of its hold was lost with it."""
    return RPCError("workflow update was aborted", RPCStatusCode.UNAVAILABLE, b"")


def test_only_an_update_aborted_by_a_failed_task_counts_as_aborted() -> None:
    assert _aborted(aborted())
    assert _aborted(dropped())
    assert not _aborted(RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b""))
    # The same code for another reason, another code with the detail, no detail at all.
    assert not _aborted(_error(RPCStatusCode.FAILED_PRECONDITION, None))
    assert not _aborted(_error(RPCStatusCode.NOT_FOUND, WorkflowNotReadyFailure()))
    assert not _aborted(RPCError("broken", RPCStatusCode.FAILED_PRECONDITION, b"\xff\x00garbage"))
    assert not _aborted(ValueError("not an RPC error"))


async def test_an_aborted_update_is_sent_again_under_its_id(no_wait: list[float]) -> None:
    entity = Entity([aborted(), aborted()])
    assert await _update(entity, "release", "r1", id="release/r1") == "applied r1"
    assert entity.ids == ["release/r1"] * 3
    assert no_wait == [0.05, 0.1]


async def test_an_update_the_server_dropped_is_sent_again_under_its_id(
    no_wait: list[float],
) -> None:
    entity = Entity([dropped(), aborted(), dropped()])
    assert await _update(entity, "release", "r2", id="withdraw/r2/7") == "applied r2"
    assert entity.ids == ["withdraw/r2/7"] * 4


async def test_any_other_error_is_raised_at_once() -> None:
    other = _error(RPCStatusCode.FAILED_PRECONDITION, None)
    entity = Entity([other])
    with pytest.raises(RPCError) as raised:
        await _update(entity, "reserve", "r1", id="reserve/r1/0")
    assert raised.value is other and entity.ids == ["reserve/r1/0"]


async def test_an_entity_that_keeps_aborting_is_given_up_on(no_wait: list[float]) -> None:
    entity = Entity([aborted() for _ in range(ABORTED_TRIES + 2)])
    with pytest.raises(RPCError) as raised:
        await _update(entity, "commit", "r1", id="commit/r1")
    assert _aborted(raised.value)
    assert len(entity.ids) == ABORTED_TRIES and len(no_wait) == ABORTED_TRIES - 1


async def test_the_callers_timeout_bounds_the_whole_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rpc_timeout`` is the send's, not each try's: each try is given what is left, and no try
    starts whose wait would end past it."""
    clock = [0.0]

    async def sleep(seconds: float) -> None:
        clock[0] += seconds

    monkeypatch.setattr(asyncio, "sleep", sleep)
    monkeypatch.setattr(_updates_module, "_clock", lambda: clock[0])
    given: list[float] = []

    class Slow(Entity):
        async def execute_update(self, update: Any, req: Any, *, id: str, **kw: Any) -> str:
            given.append(kw["rpc_timeout"].total_seconds())
            clock[0] += 0.1  # each try takes 100 ms before the server aborts it
            return await super().execute_update(update, req, id=id)

    entity = Slow([aborted() for _ in range(ABORTED_TRIES)])
    with pytest.raises(RPCError):
        await _update(entity, "decide", "d", id="decide/1", rpc_timeout=timedelta(seconds=0.6))
    assert 1 < len(given) < ABORTED_TRIES
    assert given[0] == pytest.approx(0.6) and all(b < a for a, b in itertools.pairwise(given))
    assert clock[0] <= 0.6 + 0.1 + 1e-9  # the last try ran out, and no wait began after it
