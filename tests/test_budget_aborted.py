"""A budget update aborted by a failed workflow task of the entity is sent again, under its id.

Under load the dev server can refuse an entity's workflow task whose cancel of a timer crossed
the timer firing (``BadCancelTimerAttributes``); an update that task held is aborted, never
applied, and the caller hears FAILED_PRECONDITION with a ``WorkflowNotReadyFailure``. The race
cannot be made on demand, so the errors here are the server's own, as its bytes carry them.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.any_pb2 import Any as AnyProto
from temporalio.api.common.v1 import GrpcStatus
from temporalio.api.errordetails.v1 import WorkflowNotReadyFailure
from temporalio.service import RPCError, RPCStatusCode

from duraguard import _budget_activities
from duraguard._budget_activities import ABORTED_TRIES, _aborted, _update

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

    monkeypatch.setattr(_budget_activities.asyncio, "sleep", sleep)
    return waits


def test_only_an_update_aborted_by_a_failed_task_counts_as_aborted() -> None:
    assert _aborted(aborted())
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
