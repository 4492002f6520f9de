"""Issue 8's attacks and faults, each reproduced on a real server and shown closed.

Numbers follow the issue: (2) a flood of well-formed unsigned decisions stays bounded and the
real yes still gets through; (3) a slow synchronous guardrail or classifier refuses (deny,
partial) while another run on the same worker completes; (5) a payment tool whose result is
not JSON pays once and the model reads that the effect happened; (6) megabytes of tool
arguments are refused naming the limit and the run ends. (1) and the rest of (2) are in
tests/test_gate.py, (8) in tests/faults/, and the codec endpoint's bearer token is here too.
(4) is in tests/test_budget*.py, (7) in tests/checks/.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle

import duraguard
from duraguard import moderation, pii, schema
from duraguard._gate import MAX_CHECKS_PER_ASK, MAX_REFUSED_ROWS
from duraguard._wire import DECIDE, PENDING_QUERY, VERIFY_ACTIVITY, PendingAsk
from duraguard.approvals import ApprovalCheck
from duraguard.audit import audit_rows
from duraguard.checks import policy
from duraguard.models import ScriptedTurn, answer, calls, last_tool_results
from duraguard.testing import (
    AgentInput,
    AgentWorkflow,
    CallInput,
    GuardedCallWorkflow,
    approver_decision,
)
from duraguard.types import ModelRequest, SealedSession

from ._harness import TOOL_LOG, TOOLS, Harness, failed_tasks, make_harness, steps
from .test_approvals import KEYS, NEEDS, PRIVATE, NeedsManager

# -- (3) slow synchronous user code --------------------------------------------------------------

EVENTS: list[str] = []
"""What happened, in order, across the worker's threads and the test."""
RELEASE = threading.Event()
"""Lets a slow check go (it would otherwise sleep its 20 s)."""


def _slow_plain_check(subject: duraguard.Subject) -> bool:
    """A guardrail written as a plain, blocking function that takes 20 s and then allows."""
    EVENTS.append("slow check started")
    RELEASE.wait(20)
    EVENTS.append("slow check returned")
    return True


SLOW_PLAIN = duraguard.guardrail(_slow_plain_check, name="slow-plain", timeout=0.5)


def _slow_classifier(text: str) -> dict[str, Any]:
    """A moderation classifier as the README shows one: a plain function. This one blocks."""
    EVENTS.append("slow check started")
    RELEASE.wait(20)
    EVENTS.append("slow check returned")
    return {"flagged": False, "categories": [], "score": 0.0}


# -- (5) a payment tool that returns something that is not JSON -------------------------------

PAYMENTS_DB: list[Path] = []


class Receipt:
    """What a payment SDK might hand back: an object, not data."""

    def __init__(self, invoice: str) -> None:
        self.invoice = invoice


@duraguard.tool(kind="write", payment_field="amount")
def pay_with_receipt(invoice: str, amount: float) -> Any:
    """Pay an invoice; returns the payment provider's receipt object."""
    with sqlite3.connect(PAYMENTS_DB[0]) as conn:
        conn.execute("INSERT INTO payments (invoice, amount) VALUES (?, ?)", (invoice, amount))
    return Receipt(invoice)


def _payments(invoice: str) -> int:
    with sqlite3.connect(PAYMENTS_DB[0]) as conn:
        return int(
            conn.execute("SELECT COUNT(*) FROM payments WHERE invoice = ?", (invoice,)).fetchone()[
                0
            ]
        )


@pytest.fixture(scope="module")
def payments_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    db = tmp_path_factory.mktemp("payments") / "payments.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE payments (invoice TEXT NOT NULL, amount REAL NOT NULL)")
    PAYMENTS_DB[:] = [db]
    yield db
    PAYMENTS_DB.clear()


@pytest.fixture(scope="module")
async def h(temporal_env: Any) -> Harness:
    harness = await make_harness(
        temporal_env,
        tools=[*TOOLS, pay_with_receipt, export_rows, read_feed],
        guardrails=[SLOW_PLAIN, NeedsManager()],
        approvers=KEYS,
    )
    # The harness registers its own toy classifier; this one sits beside it, by name.
    harness.plugin.resources.classifiers["slow-sync"] = _slow_classifier
    return harness


@pytest.fixture
def released() -> Iterator[None]:
    """Each slow-check test starts blocked and lets its sleeper go at the end."""
    EVENTS.clear()
    RELEASE.clear()
    TOOL_LOG.clear()
    yield
    RELEASE.set()


async def _until(predicate: Any, what: str) -> None:
    for _ in range(600):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


async def _slow_check_refuses_while_another_run_completes(
    h: Harness, guardrail: duraguard.GuardrailSpec, by: str
) -> None:
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        slow = await h.start(
            GuardedCallWorkflow.run,
            CallInput(calls=[("refund", {"order_id": "A1", "amount": 5})], guardrails=[guardrail]),
            task_queue=tq,
        )
        await _until(lambda: "slow check started" in EVENTS, "the slow check started")
        other = await h.start(
            GuardedCallWorkflow.run,
            CallInput(calls=[("lookup", {"order_id": "A2"})], guardrails=[schema()]),
            task_queue=tq,
        )
        [looked_up] = await other.result()
        EVENTS.append("other run completed")
        [refused] = await slow.result()
        EVENTS.append("slow run completed")
        # The blocked check is still blocked: neither run waited for it.
        assert EVENTS == ["slow check started", "other run completed", "slow run completed"] or (
            EVENTS == ["slow check started", "slow run completed", "other run completed"]
        ), EVENTS
    RELEASE.set()
    await _until(lambda: "slow check returned" in EVENTS, "the slow check returned")
    assert EVENTS[-1] == "slow check returned"
    assert looked_up["ran"] is True
    assert (refused["ran"], refused["action"], refused["by"]) == (False, "deny", by)
    assert TOOL_LOG == [("lookup", {"order_id": "A2"})]  # the refund never ran
    rows = await audit_rows(slow, h.client.data_converter)
    [row] = [r for r in rows if r.tool == "refund"]
    assert (row.action, row.outcome, row.by) == ("deny", "partial", by)
    assert "timed out after 0.5s" in (row.reason or "")
    await h.replay(await slow.fetch_history())


async def test_3_a_slow_plain_function_guardrail_refuses_and_stalls_no_other_run(
    h: Harness, released: None
) -> None:
    await _slow_check_refuses_while_another_run_completes(h, SLOW_PLAIN.spec(), "slow-plain")


async def test_3_a_slow_sync_classifier_refuses_and_stalls_no_other_run(
    h: Harness, released: None
) -> None:
    spec = moderation(
        classifier="slow-sync", placements=["tool-args"], timeout=0.5, name="moderation"
    )
    await _slow_check_refuses_while_another_run_completes(h, spec, "moderation")


# -- (5) --------------------------------------------------------------------------------------


def _report(request: ModelRequest) -> ScriptedTurn:
    """The model's next turn: it says what the tool's result told it."""
    return answer(" | ".join(m.content or "" for m in last_tool_results(request)))


async def test_5_a_payment_whose_result_is_not_json_pays_once_and_the_model_is_told(
    h: Harness, payments_db: Path
) -> None:
    invoice = f"INV-{uuid.uuid4().hex[:6]}"
    model = h.script(calls(("pay_with_receipt", {"invoice": invoice, "amount": 40.0})), _report)
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="pay it", model=model, tools=["pay_with_receipt"], guardrails=[schema()]),
    )
    assert _payments(invoice) == 1  # paid once: never retried
    told = run.result.answer
    assert "ran, but its result cannot be recorded as JSON" in told
    assert "its effect happened and it is not run again" in told
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in run.history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and _scheduled_type(
            run.history, e.activity_task_started_event_attributes.scheduled_event_id
        )
        == "pay_with_receipt"
    ]
    assert attempts == [1]
    [failed] = [
        e for e in run.history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    info = failed.activity_task_failed_event_attributes.failure.application_failure_info
    assert info.type == "duraguard.ResultNotRecorded" and info.non_retryable


EXPORTS: list[int] = []


@duraguard.tool(kind="write")
def export_rows(n: int) -> dict[str, Any]:
    """Exports rows to a partner (an effect) and returns them: every row holds an email."""
    EXPORTS.append(n)
    return {"rows": [f"row {i} ana@example.com " + "x" * 40 for i in range(n)]}


@pytest.mark.parametrize("rows", [9000, 14000])
async def test_5_a_result_with_thousands_of_findings_runs_once_and_reaches_the_model_masked(
    h: Harness, rows: int
) -> None:
    """600 KB of rows, 9,000 emails: the masked copies and one finding each made the step's
    output larger than the SDK uploads, and every retry exported the rows again. With 14,000
    rows the findings alone pass the step's bound: the first ones are kept."""
    EXPORTS.clear()
    model = h.script(calls(("export_rows", {"n": rows})), _report)
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="export them", model=model, tools=["export_rows"],
            guardrails=[pii(placements=["tool-result"])],
        ),
    )  # fmt: skip
    assert EXPORTS == [rows]  # once
    told = json.loads(run.result.answer)  # what the model read, said back by _report
    assert len(told["rows"]) == rows and "ana@example.com" not in json.dumps(told)
    [row] = [v for v in run.result.verdicts if v.placement == "tool-result"]
    assert (row.action, row.by) == ("mask", "pii")
    raw = b"".join(e.SerializeToString() for e in run.history.events)
    assert b"ana@example.com" not in raw  # the step returned the masked rows only


@duraguard.tool(kind="read", labels=("web",))
def read_feed(n: int) -> dict[str, Any]:
    """A web feed of ``n`` rows (outside content), each naming its own address."""
    return {"rows": [f"Row {i}: write to u{i}@feed.example" for i in range(n)]}


@pytest.mark.parametrize("row", [3, 13_999])
async def test_5_outside_content_too_large_to_note_whole_is_read_in_part_and_hides_nothing(
    h: Harness, row: int
) -> None:
    """14,000 rows of a web feed: noting them whole in workflow code took past the SDK's deadlock
    limit under load, on every retry. The index reads the first rows; an address of the unread
    rest (row 13,999) is refused as one of the part read (row 3) is, and the run ends."""
    TOOL_LOG.clear()
    to = f"u{row}@feed.example"
    model = h.script(
        calls(("read_feed", {"n": 14_000})),
        calls(("send_email", {"to": to, "body": "hi"})),
        _report,
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="read the feed and tell them", model=model, tools=["read_feed", "send_email"],
            guardrails=[policy(preset="balanced")],
        ),
    )  # fmt: skip
    assert TOOL_LOG == []  # the send never ran
    [row_verdict] = [
        v for v in run.result.verdicts if v.placement == "tool-args" and v.action != "allow"
    ]
    assert (row_verdict.action, row_verdict.by) == ("deny", "policy"), row_verdict
    assert to in (row_verdict.reason or "")
    assert failed_tasks(run.history) == []


def _scheduled_type(history: Any, event_id: int) -> str:
    for e in history.events:
        if e.event_id == event_id:
            return str(e.activity_task_scheduled_event_attributes.activity_type.name)
    return ""


# -- (6) --------------------------------------------------------------------------------------


async def test_6_megabytes_of_tool_arguments_are_refused_naming_the_limit_and_the_run_ends(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    blob = "x" * 1_500_000
    model = h.script(calls(("send_email", {"to": "ana@example.com", "body": blob})), _report)
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="mail it", model=model, tools=["send_email"], guardrails=[schema()]),
    )
    assert run.result.stop_reason == "done"  # the run ended; no workflow task failed forever
    told = run.result.answer
    assert "1,048,576-byte limit" in told and "'send_email'" in told, told[:400]
    assert TOOL_LOG == []
    assert failed_tasks(run.history) == []
    assert "duraguard.check" not in run.activity_names()  # refused before any step


class _ReadsTotals(duraguard.Guardrail):
    """Reads the session's running totals (as a spending limit does) and lets the call go."""

    name = "reads-totals"
    placements = frozenset({"tool-args"})
    seen: ClassVar[list[float]] = []

    async def check(self, subject: duraguard.Subject) -> duraguard.Verdict:
        assert subject.session is not None
        self.seen.append(subject.session.sums.get("refund", {}).get("amount", 0.0))
        return duraguard.Verdict.allow()


async def test_amounts_whose_running_total_passes_the_largest_float_do_not_wedge_the_run(
    temporal_env: Any,
) -> None:
    """Two calls of 9e307 each: the session's running total of ``amount`` would be infinite,
    which no session view can carry (the workflow task would fail on every attempt, the run
    stuck). The total stays at the largest float (a spending limit on it refuses) and the calls
    after are judged as usual."""
    h = await make_harness(temporal_env, guardrails=[_ReadsTotals()])
    TOOL_LOG.clear()
    _ReadsTotals.seen.clear()
    huge = 8.98846567431158e307
    model = h.script(
        calls(("refund", {"order_id": "A1", "amount": huge})),
        calls(("refund", {"order_id": "A2", "amount": huge})),
        calls(("refund", {"order_id": "A3", "amount": 1.0})),
        answer("done"),
    )
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(
            prompt="refund them",
            model=model,
            tools=["refund"],
            guardrails=[schema(), _ReadsTotals().spec()],
        ),
    )
    assert run.result.stop_reason == "done"
    assert failed_tasks(run.history) == []
    assert [args["order_id"] for _, args in TOOL_LOG] == ["A1", "A2", "A3"]
    assert _ReadsTotals.seen == [0.0, huge, sys.float_info.max]


# -- (2) a flood of well-formed but unsigned decisions ---------------------------------------


async def _parked(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(400):
        pending: list[PendingAsk] = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no call was parked")


async def _the_real_yes_pays_once(handle: WorkflowHandle[Any, Any], ask: PendingAsk) -> Any:
    """The manager's signed yes: accepted, the run ends, and the refund ran once."""
    good = approver_decision(ask, approver="alice", private_key=PRIVATE["alice"])
    check = await handle.execute_update(DECIDE, good, result_type=ApprovalCheck)
    assert check.ok, check.reason
    result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    return result


def _asked_refund(h: Harness) -> AgentInput:
    """A run whose one call, a refund of 500, waits for a manager's yes."""
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    return AgentInput(prompt="refund A2", model=model, tools=["refund"], guardrails=[NEEDS])


async def test_2_two_hundred_unsigned_decisions_stay_bounded_and_the_real_yes_still_counts(
    h: Harness,
) -> None:
    TOOL_LOG.clear()
    spec, tq = _asked_refund(h), f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, spec, task_queue=tq)
        ask = await _parked(handle)
        before = len((await handle.fetch_history()).events)
        for _ in range(200):
            unsigned = approver_decision(ask, approver="alice")  # a fresh nonce each, no signature
            await handle.signal(DECIDE, unsigned)
        await _parked(handle)  # still answering, still waiting
        result = await _the_real_yes_pays_once(handle, ask)
    history = await handle.fetch_history()
    verified = [name for name, _ in steps(history) if name == VERIFY_ACTIVITY]
    # Forged decisions are refused against the keys the ask recorded: no step at all.
    assert len(verified) == 1
    refused_rows = [
        v for v in result.verdicts if v.check in ("decision.message", "decision.refused")
    ]
    assert len(refused_rows) <= MAX_CHECKS_PER_ASK + MAX_REFUSED_ROWS
    added = len(history.events) - before
    print(f"\n200 unsigned decisions + 1 yes: {added} history events, {len(verified)} verified")
    await h.replay(history)


@pytest.mark.parametrize("expires_at", ["NaN", "Infinity", "-Infinity"])
async def test_2_a_decision_expiring_at_nan_or_infinity_is_refused_and_the_run_goes_on(
    h: Harness, expires_at: str
) -> None:
    """NaN compares false with every time (never stale) and no canonical JSON carries it: a
    forged decision with it once failed every workflow task of the run, queries included."""
    TOOL_LOG.clear()
    spec, tq = _asked_refund(h), f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, spec, task_queue=tq)
        ask = await _parked(handle)
        forged = approver_decision(ask, approver="alice").model_dump(mode="json")
        forged.update(expires_at=expires_at, signature="AAAA")
        await handle.signal(DECIDE, forged)
        await _parked(handle)  # the query still answers: the signal did not wedge the run
        result = await _the_real_yes_pays_once(handle, ask)
    history = await handle.fetch_history()
    assert failed_tasks(history) == []
    assert any(v.check == "decision.message" for v in result.verdicts), result.verdicts
    await h.replay(history)


# -- (1) a used nonce stays used across continue-as-new ---------------------------------------


class CarryInput(BaseModel):
    runs_left: int
    sealed: SealedSession | None = None


@workflow.defn(name="attacks.ApproveThenCarry")
class ApproveThenCarry:
    """Asks a person about a refund, then continues-as-new with its session and asks again."""

    @workflow.run
    async def run(self, spec: CarryInput) -> str:
        await duraguard.resume(spec.sealed)
        out = await duraguard.guarded_call(
            "refund", {"order_id": "A2", "amount": 500}, guardrails=[NEEDS]
        )
        if spec.runs_left <= 0:
            return f"{out.call_id}:{out.ran}"
        sealed = await duraguard.carry_over()
        workflow.continue_as_new(CarryInput(runs_left=spec.runs_left - 1, sealed=sealed))


async def test_1_a_nonce_used_in_one_run_is_refused_in_the_run_it_continues_as(
    temporal_env: Any,
) -> None:
    """The yes of the first run is refused in the next (another run, another ask); so is a
    yes for the next run's own ask that reuses the first's nonce: used nonces are carried."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from duraguard.approvals import sign
    from tests._servers import Replayer

    hc = await make_harness(
        temporal_env,
        workflows=[ApproveThenCarry],
        guardrails=[NeedsManager()],
        approvers=KEYS,
        session_key="s" * 32,
    )
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    runner = UnsandboxedWorkflowRunner()  # the workflow lives in this test module
    async with Worker(
        hc.client, task_queue=tq, workflows=[ApproveThenCarry], workflow_runner=runner
    ):
        handle = await hc.start(ApproveThenCarry.run, CarryInput(runs_left=1), task_queue=tq)
        first = await _parked(handle)
        yes = approver_decision(first, approver="alice", private_key=PRIVATE["alice"])
        assert (await handle.execute_update(DECIDE, yes, result_type=ApprovalCheck)).ok
        second = await _parked_other(handle, first.run_id)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(DECIDE, yes, result_type=ApprovalCheck)
        assert "no call 'c1' is waiting" in str(refused.value.cause)  # call ids go on: c2
        reused = approver_decision(second, approver="alice").model_copy(update={"nonce": yes.nonce})
        reused = sign(reused, PRIVATE["alice"])
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(DECIDE, reused, result_type=ApprovalCheck)
        assert "nonce was used before" in str(refused.value.cause)
        fresh = approver_decision(second, approver="alice", private_key=PRIVATE["alice"])
        assert (await handle.execute_update(DECIDE, fresh, result_type=ApprovalCheck)).ok
        assert await handle.result() == f"{second.call_id}:True"
    assert [t for t, _ in TOOL_LOG] == ["refund", "refund"]  # once per run, each with its own yes
    before = hc.plugin.checks_run
    replayer = Replayer(workflows=[ApproveThenCarry], plugins=[hc.plugin], workflow_runner=runner)
    await replayer.replay_workflow(await handle.fetch_history())
    assert hc.plugin.checks_run == before


async def _parked_other(handle: WorkflowHandle[Any, Any], run_id: str) -> PendingAsk:
    """The ask of a run other than ``run_id`` (the run the workflow continued as)."""
    for _ in range(400):
        pending: list[PendingAsk] = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending and pending[0].run_id != run_id:
            return pending[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the next run never parked")


# -- the codec endpoint checks who is asking ---------------------------------------------------

TOKEN = "t0ken-" + "k" * 32


@pytest.fixture
def codec_keys(monkeypatch: pytest.MonkeyPatch) -> Any:
    from duraguard.codec import ENV_VAR, AesGcmCodec, new_key

    monkeypatch.setenv(ENV_VAR, f"k1:{new_key()}")
    return AesGcmCodec.from_env()


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


async def _encrypted(codec: Any) -> bytes:
    from google.protobuf import json_format
    from temporalio.api.common.v1 import Payloads
    from temporalio.contrib.pydantic import pydantic_data_converter

    [plain] = pydantic_data_converter.payload_converter.to_payloads(["card 4111"])
    sealed = await codec.encode([plain])
    return json_format.MessageToJson(Payloads(payloads=sealed)).encode()


async def test_the_codec_endpoint_with_a_token_refuses_who_does_not_send_it(
    codec_keys: Any,
) -> None:
    from duraguard.codec import CodecServer

    body = await _encrypted(codec_keys)
    with CodecServer(codec_keys, token=TOKEN) as server:
        assert server.requires_token
        url = f"{server.url}/decode"
        status, reply = await asyncio.to_thread(_post, url, body)
        assert status == 401 and "Bearer" in reply["message"]
        status, _ = await asyncio.to_thread(_post, url, body, {"Authorization": "Bearer wrong"})
        assert status == 403
        status, _ = await asyncio.to_thread(_post, url, body, {"Authorization": f"Basic {TOKEN}"})
        assert status == 401
        status, reply = await asyncio.to_thread(
            _post, url, body, {"Authorization": f"Bearer {TOKEN}"}
        )
        assert status == 200
        decoded = reply["payloads"][0]
        assert decoded["metadata"]["encoding"]  # plain JSON payload again


async def test_the_codec_endpoint_on_loopback_without_a_token_stays_open(codec_keys: Any) -> None:
    from duraguard.codec import CodecServer

    body = await _encrypted(codec_keys)
    with CodecServer(codec_keys) as server:
        assert not server.requires_token and server.url.startswith("http://127.0.0.1:")
        status, _ = await asyncio.to_thread(_post, f"{server.url}/decode", body)
        assert status == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "codec.internal"])
def test_the_codec_endpoint_will_not_listen_beyond_loopback_without_a_token(
    codec_keys: Any, host: str
) -> None:
    from duraguard.codec import TOKEN_ENV, CodecError, CodecServer

    with pytest.raises(CodecError, match=f"needs a token: set \\${TOKEN_ENV}"):
        CodecServer(codec_keys, host=host)


def test_a_short_codec_token_is_refused(codec_keys: Any) -> None:
    from duraguard.codec import CodecError, CodecServer

    with pytest.raises(CodecError, match="at least 24 characters"):
        CodecServer(codec_keys, token="hunter2")


def test_the_token_is_compared_in_constant_time(
    codec_keys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hmac

    from duraguard.codec import CodecServer

    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    server = CodecServer(codec_keys, token=TOKEN)
    try:
        assert server.authorized(f"Bearer {TOKEN}") == 200
        assert server.authorized("Bearer nope") == 403
        assert server.authorized(None) == 401
    finally:
        server.stop()
    assert seen == [(TOKEN.encode(), TOKEN.encode()), (b"nope", TOKEN.encode())]


# -- docs/guarantees.md points only at tests that exist ----------------------------------------


def test_every_guarantee_points_at_a_test_that_exists() -> None:
    import re

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "guarantees.md").read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(refs) >= 20
    for path, name in refs:
        source = (root / path).read_text()
        assert re.search(rf"def {name}\(", source), f"docs/guarantees.md names {path}::{name}"
