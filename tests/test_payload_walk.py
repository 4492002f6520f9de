"""The SDK's payload walk without its context look-ups when no codec and no storage could use
them (:mod:`duraguard._payload_walk`): the same payloads, and every look-up kept where a codec
may read the context."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import temporalio.bridge.worker
import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.converter import ActivitySerializationContext, SerializationContext
from temporalio.worker._workflow import _CommandAwareDataConverter
from temporalio.worker.workflow_sandbox import _runner

from duraguard import _payload_walk, pii, schema
from duraguard.codec import ENCODING, AesGcmCodec, new_key
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import Harness, make_harness, steps

MARKER = "__temporal_external_storage_reference"  # temporalio.converter._extstore's
WALKS = (
    "_encode_payload_sequence",
    "_external_store_payload_sequence",
    "_encode_reference_payload_sequence",
    "_decode_reference_payload_sequence",
    "_external_retrieve_payload_sequence",
    "_decode_payload_sequence",
)
"""The converter's methods the SDK walks an activation and a completion with."""


@pytest.fixture
def look_ups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every context the sandbox is asked for, counted where the SDK asks."""
    asked: list[Any] = []
    theirs = _runner._Instance.get_serialization_context

    def counted(self: Any, command_info: Any) -> SerializationContext | None:
        asked.append(command_info)
        return theirs(self, command_info)

    monkeypatch.setattr(_runner._Instance, "get_serialization_context", counted)
    yield asked
    _payload_walk.install()


class _NeverAsk:
    """A workflow instance that fails any test that asks it for a context."""

    def get_serialization_context(self, command_info: Any) -> None:
        raise AssertionError("the payload walk asked for a context it cannot use")

    def get_external_store_context(self, command_info: Any) -> None:
        raise AssertionError("the payload walk asked for a store context it cannot use")


def _converter(codec: Any = None) -> Any:
    base = temporalio.converter.DataConverter.default
    if codec is not None:
        base = temporalio.converter.DataConverter(payload_codec=codec)
    ctx = temporalio.converter.WorkflowSerializationContext(namespace="default", workflow_id="w")
    return _CommandAwareDataConverter.create(
        instance=_NeverAsk(),  # type: ignore[arg-type]
        context_free_dc=base,
        workflow_context_dc=base.with_context(ctx),
        workflow_context=ctx,
    )


def _payload(text: str = '"x"', **meta: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain", **meta}, data=text.encode())


def test_install_is_idempotent_and_uninstall_puts_the_sdk_back() -> None:
    assert _payload_walk.install() is None
    assert _payload_walk.installed()
    first = _CommandAwareDataConverter.__dict__["create"]
    encode = temporalio.bridge.worker.encode_completion
    assert _payload_walk.install() is None
    assert _CommandAwareDataConverter.__dict__["create"] is first  # not wrapped twice
    assert temporalio.bridge.worker.encode_completion is encode
    _payload_walk.uninstall()
    try:
        assert not _payload_walk.installed()
        assert not hasattr(_CommandAwareDataConverter.create, "__duraguard_payload_walk__")
        assert not hasattr(temporalio.bridge.worker.encode_completion, "__duraguard_payload_walk__")
        assert isinstance(_converter(), _CommandAwareDataConverter)  # the SDK's own again
    finally:
        assert _payload_walk.install() is None


async def test_without_codec_or_storage_the_worker_converter_walks_unasked() -> None:
    _payload_walk.install()
    dc = _converter()
    assert dc is temporalio.converter.DataConverter.default  # no command-aware one is made
    given = [_payload('"a"'), _payload('{"b": 1}')]
    for name in WALKS:
        assert await getattr(dc, name)(given) == given, name


async def test_a_payload_stored_outside_is_still_refused_without_storage() -> None:
    _payload_walk.install()
    dc = _converter()
    stored = _payload(**{MARKER: b"true"})
    with pytest.raises(RuntimeError, match="TMPRL1105"):
        await dc._decode_reference_payload_sequence([stored])


async def test_with_a_codec_that_takes_a_context_the_walk_asks_as_the_sdk_does() -> None:
    _payload_walk.install()
    dc = _converter(_Recording([("k1", base64.b64decode(new_key()))]))
    assert isinstance(dc, _CommandAwareDataConverter)
    with pytest.raises(AssertionError, match="asked for a context"):
        await dc._encode_payload_sequence([_payload()])


async def test_a_codec_that_takes_no_context_seals_without_a_look_up() -> None:
    _payload_walk.install()
    codec = AesGcmCodec([("k1", base64.b64decode(new_key()))])
    dc = _converter(codec)
    assert not isinstance(dc, _CommandAwareDataConverter) and dc.payload_codec is codec
    [sealed] = await dc._encode_payload_sequence([_payload()])
    assert sealed.metadata["encoding"] == ENCODING
    assert await dc._decode_payload_sequence([sealed]) == [_payload()]


def _completion() -> Any:
    from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion

    done = WorkflowActivationCompletion(run_id="r")
    command = done.successful.commands.add()
    command.schedule_activity.seq = 1
    command.schedule_activity.activity_type = "lookup"
    command.schedule_activity.arguments.append(_payload('{"order_id": "A1"}'))
    return done


async def test_a_completion_is_sent_as_it_is_without_codec_and_sealed_with_one() -> None:
    _payload_walk.install()
    done = _completion()
    metrics = await temporalio.bridge.worker.encode_completion(done, _converter(), True, 1)
    assert metrics.payload_count == 0
    assert done == _completion()
    sealed = _completion()
    codec = AesGcmCodec([("k1", base64.b64decode(new_key()))])
    base = temporalio.converter.DataConverter(payload_codec=codec)
    await temporalio.bridge.worker.encode_completion(sealed, base, True, 1)  # no instance to ask
    [arg] = sealed.successful.commands[0].schedule_activity.arguments
    assert arg.metadata["encoding"] == ENCODING
    assert await codec.decode([arg]) == [_payload('{"order_id": "A1"}')]


def test_an_sdk_of_another_shape_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    class Other:
        def create(self) -> None:  # a method, not the staticmethod this was written against
            return None

    monkeypatch.setattr(_payload_walk, "_command_aware", lambda: Other)
    why = _payload_walk.install()
    assert why is not None and "create()" in why
    assert not hasattr(Other.__dict__["create"], "__duraguard_payload_walk__")
    monkeypatch.setattr(_payload_walk, "_command_aware", lambda: None)
    assert _payload_walk.install() == why
    assert not _payload_walk.installed()
    monkeypatch.undo()
    monkeypatch.delattr(temporalio.bridge.worker, "encode_completion")
    assert "encode_completion" in (_payload_walk.install() or "")


# -- on a real server ------------------------------------------------------------------------


class _Recording(AesGcmCodec, temporalio.converter.WithSerializationContext):
    """The encryption codec, noting every context the SDK hands it."""

    seen: ClassVar[list[SerializationContext]] = []

    def with_context(self, context: SerializationContext) -> _Recording:
        _Recording.seen.append(context)
        return self


async def _agent(h: Harness, *, walk: str) -> Any:
    """Run one agent loop on a worker whose payload walk is ours (``walk="ours"``) or the
    SDK's; the history, and the run's steps."""
    tq = f"tq-walk-{walk}-{uuid.uuid4().hex[:8]}"
    worker = h.worker(tq)  # configuring the worker installs the short cut
    if walk == "sdk":
        _payload_walk.uninstall()
    async with worker:
        model = h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00"))
        agent = AgentInput(
            prompt="What is order A1?",
            model=model,
            tools=["lookup"],
            guardrails=[schema(), pii(), h.counting.spec()],
        )
        handle = await h.start(AgentWorkflow.run, agent, task_queue=tq)
        result = await handle.result()
    return result, await handle.fetch_history()


async def test_an_agent_loop_runs_the_same_without_a_single_look_up(temporal_env, look_ups) -> None:
    h = await make_harness(temporal_env)
    ours, ours_history = await _agent(h, walk="ours")
    assert look_ups == []  # no payload list of the run, in or out, asked the sandbox
    await h.replay(ours_history)  # replay reads the verdicts back and asks no guardrail
    assert look_ups == []
    theirs, theirs_history = await _agent(h, walk="sdk")
    assert len(look_ups) > 10  # the SDK's walk asks for every payload list, three times
    assert ours.stop_reason == theirs.stop_reason == "done"
    assert ours.answer == theirs.answer == "Order A1 is 20.00"
    assert steps(ours_history) == steps(theirs_history)


async def test_an_encrypted_agent_loop_runs_without_a_look_up(temporal_env, look_ups) -> None:
    h = await make_harness(temporal_env, codec=AesGcmCodec([("k1", base64.b64decode(new_key()))]))
    result, history = await _agent(h, walk="ours")
    assert look_ups == [] and result.stop_reason == "done"
    assert result.answer == "Order A1 is 20.00"
    sealed = [
        e.activity_task_scheduled_event_attributes.input.payloads[0]
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert len(sealed) >= 3 and all(p.metadata["encoding"] == ENCODING for p in sealed)
    await h.replay(history)  # the verdicts read back, decrypted, no guardrail asked again
    assert look_ups == []


async def test_a_codec_gets_each_steps_context_with_the_short_cut_in_place(temporal_env) -> None:
    codec = _Recording([("k1", base64.b64decode(new_key()))])
    h = await make_harness(temporal_env, codec=codec)
    _Recording.seen.clear()
    result, history = await _agent(h, walk="ours")
    assert _payload_walk.installed()
    assert result.stop_reason == "done"
    activities = {
        c.activity_type for c in _Recording.seen if isinstance(c, ActivitySerializationContext)
    }
    assert {"lookup", "duraguard.model"} <= activities, activities
    sealed = [
        e.activity_task_scheduled_event_attributes.input.payloads[0]
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert sealed and all(p.metadata["encoding"] == ENCODING for p in sealed)
