"""The audit read from a real history: local activity markers and regular activity
completions of ``duraguard.check`` and ``duraguard.verify-decision``, with and without a codec."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from duraguard._types import PassResult, Verdict
from duraguard._wire import CheckRequest, CheckResponse, VerifyRequest
from duraguard.approvals import ApprovalCheck, Decision
from duraguard.audit import audit_records, audit_rows
from duraguard.cli import main
from duraguard.codec import ENCODING, ENV_VAR, AesGcmCodec, CodecError, new_key
from duraguard.server import DevServer

CARD = "4111 1111 1111 1111"


@activity.defn(name="duraguard.check")
async def check_activity(req: CheckRequest) -> CheckResponse:
    """A stand-in for the real check: the verdicts the test wants recorded, by purpose."""
    if req.purpose == "tool-result":
        masked = PassResult(
            verdict=Verdict(action="mask", by="pii", check="pii.card", reason="card number"),
            value={"note": "card [card]"},
            placement="tool-result",
            tool="lookup_order",
            call_id="c1",
        )
        return CheckResponse(results=(masked,), purpose=req.purpose, turn=req.turn)
    allowed = PassResult(
        verdict=Verdict.allow(), placement="tool-args", tool="lookup_order", call_id="c1"
    )
    asked = PassResult(
        verdict=Verdict.approve("refunds over 100 need a manager", role="manager", by="policy"),
        placement="tool-args",
        tool="refund_card",
        call_id="c2",
    )
    return CheckResponse(results=(allowed, asked), purpose=req.purpose, turn=req.turn)


@activity.defn(name="duraguard.verify-decision")
async def verify_activity(req: VerifyRequest) -> ApprovalCheck:
    if req.decision.approver == "mallory":
        return ApprovalCheck(
            ok=False,
            reason="unknown approver 'mallory'",
            approver="mallory",
            call_id=req.call_id,
            decision=req.decision.decision,
        )
    return ApprovalCheck(
        ok=True, approver=req.decision.approver, call_id=req.call_id, decision="approve"
    )


@activity.defn(name="lookup_order")
async def lookup_order(order: str) -> str:
    return f"order {order}: card {CARD}"


def _verify_request(approver: str) -> VerifyRequest:
    decision = Decision(
        workflow_id="w",
        call_id="c2",
        call_digest="d" * 64,
        decision="approve",
        approver=approver,
        reason="customer is right",
        expires_at=0,
    )
    return VerifyRequest(
        decision=decision,
        workflow_id="w",
        call_id="c2",
        tool="refund_card",
        args={"amount": 150},
    )


@workflow.defn
class TinyAudited:
    """Two passes as local activities, one as a regular activity, two decision checks
    (one local, one regular) and an unrelated activity that the audit must skip."""

    @workflow.run
    async def run(self) -> str:
        t = timedelta(seconds=10)
        await workflow.execute_local_activity(
            "duraguard.check",
            CheckRequest(guardrails=(), subjects=(), purpose="tool-args", turn=1),
            result_type=CheckResponse,
            start_to_close_timeout=t,
            summary="duraguard: 2 calls checked",
        )
        await workflow.execute_activity(
            lookup_order, "o-1", start_to_close_timeout=t, summary="lookup_order"
        )
        await workflow.execute_activity(
            "duraguard.check",
            CheckRequest(guardrails=(), subjects=(), purpose="tool-result", turn=1),
            result_type=CheckResponse,
            start_to_close_timeout=t,
            summary="lookup_order result masked by pii",
        )
        await workflow.execute_local_activity(
            "duraguard.verify-decision",
            _verify_request("mallory"),
            result_type=ApprovalCheck,
            start_to_close_timeout=t,
        )
        await workflow.execute_activity(
            "duraguard.verify-decision",
            _verify_request("alice"),
            result_type=ApprovalCheck,
            start_to_close_timeout=t,
        )
        return "done"


@pytest.fixture(scope="module")
async def dev() -> AsyncIterator[DevServer]:
    async with DevServer(ui=False) as srv:
        yield srv


async def _run_tiny(dev: DevServer, converter: DataConverter) -> tuple[Client, str]:
    client = await Client.connect(dev.address, data_converter=converter)
    queue = f"audit-{uuid.uuid4().hex[:8]}"
    wf_id = f"tiny-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[TinyAudited],
        activities=[check_activity, verify_activity, lookup_order],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        await client.execute_workflow(
            TinyAudited.run, id=wf_id, task_queue=queue, execution_timeout=timedelta(seconds=60)
        )
    return client, wf_id


@pytest.fixture(scope="module")
async def plain_run(dev: DevServer) -> tuple[Client, str]:
    return await _run_tiny(dev, pydantic_data_converter)


CODEC_KEYS = f"k1:{new_key()}"


@pytest.fixture(scope="module")
async def encrypted_run(dev: DevServer) -> tuple[Client, str]:
    codec = AesGcmCodec.from_env(environ={ENV_VAR: CODEC_KEYS})
    return await _run_tiny(dev, dataclasses.replace(pydantic_data_converter, payload_codec=codec))


async def test_audit_reads_every_verdict_in_history_order(plain_run: tuple[Client, str]) -> None:
    client, wf_id = plain_run
    rows = await audit_rows(client.get_workflow_handle(wf_id), pydantic_data_converter)
    got = [(r.turn, r.call_id, r.tool, r.placement, r.action, r.by, r.approver) for r in rows]
    assert got == [
        (1, "c1", "lookup_order", "tool-args", "allow", None, None),
        (1, "c2", "refund_card", "tool-args", "approve", "policy", None),
        (1, "c1", "lookup_order", "tool-result", "mask", "pii", None),
        (1, "c2", "refund_card", "tool-args", "deny", "duraguard.decision", "mallory"),
        (1, "c2", "refund_card", "tool-args", "allow", "person", "alice"),
    ]
    assert rows[1].reason == "refunds over 100 need a manager"
    assert rows[3].check == "decision.refused" and "mallory" in (rows[3].reason or "")
    assert rows[4].check == "decision" and rows[4].reason == "customer is right"


async def test_audit_records_say_where_each_verdict_was_recorded(
    plain_run: tuple[Client, str],
) -> None:
    client, wf_id = plain_run
    history = await client.get_workflow_handle(wf_id).fetch_history()
    records = await audit_records(history, pydantic_data_converter)
    assert [(r.activity, r.local) for r in records] == [
        ("duraguard.check", True),
        ("duraguard.check", True),
        ("duraguard.check", False),
        ("duraguard.verify-decision", True),
        ("duraguard.verify-decision", False),
    ]
    assert records[0].summary == "duraguard: 2 calls checked"
    assert records[2].value == {"note": "card [card]"}
    assert len({r.event_id for r in records}) == 4  # one pass, two verdicts, one event
    # the same rows from the raw events as from the history object
    assert [r.row for r in records] == await audit_rows(history.events, pydantic_data_converter)


async def test_encrypted_history_needs_the_codec_and_reads_with_it(
    encrypted_run: tuple[Client, str],
) -> None:
    client, wf_id = encrypted_run
    history = await client.get_workflow_handle(wf_id).fetch_history()
    markers = [e for e in history.events if e.HasField("marker_recorded_event_attributes")]
    result = markers[0].marker_recorded_event_attributes.details["result"].payloads[0]
    assert result.metadata["encoding"] == ENCODING
    assert b"refund_card" not in result.data
    with pytest.raises(Exception):  # noqa: B017 - the plain converter cannot read ciphertext
        await audit_rows(history, pydantic_data_converter)
    rows = await audit_rows(history, client.data_converter)
    assert [r.action for r in rows] == ["allow", "approve", "mask", "deny", "allow"]
    other = dataclasses.replace(
        pydantic_data_converter, payload_codec=AesGcmCodec([("k9", base64.b64decode(new_key()))])
    )
    with pytest.raises(CodecError, match="'k1'"):
        await audit_rows(history, other)


async def test_cli_audit_hides_reasons_and_values_unless_revealed(
    dev: DevServer, plain_run: tuple[Client, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, wf_id = plain_run
    assert await asyncio.to_thread(main, ["audit", wf_id, "--address", dev.address, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["action"] for r in rows] == ["allow", "approve", "mask", "deny", "allow"]
    assert all("reason" not in r and "value" not in r for r in rows)
    assert rows[4]["approver"] == "alice" and rows[0]["local"] is True

    argv = ["audit", wf_id, "--address", dev.address, "--json", "--reveal"]
    assert await asyncio.to_thread(main, argv) == 0
    revealed = json.loads(capsys.readouterr().out)
    assert revealed[1]["reason"] == "refunds over 100 need a manager"
    assert revealed[2]["value"] == {"note": "card [card]"}


async def test_cli_audit_table_is_aligned_and_safe_to_show(
    dev: DevServer, plain_run: tuple[Client, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, wf_id = plain_run
    assert await asyncio.to_thread(main, ["audit", wf_id, "--address", dev.address]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "TURN", "CALL", "TOOL", "PLACEMENT", "ACTION", "DECIDED", "BY", "OUTCOME", "APPROVER",
    ]  # fmt: skip
    assert len(lines) == 6
    col = lines[0].index("ACTION")
    assert [line[col:].split()[0] for line in lines[1:]] == [
        "allow", "approve", "mask", "deny", "allow",
    ]  # fmt: skip
    assert "manager" not in "\n".join(lines) and "\x1b[" not in "\n".join(lines)
    assert "duraguard.decision (decision.refused)" in lines[4]


async def test_cli_audit_decrypts_with_keys_from_the_environment(
    dev: DevServer,
    encrypted_run: tuple[Client, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, wf_id = encrypted_run
    argv = ["audit", wf_id, "--address", dev.address, "--json"]
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert await asyncio.to_thread(main, argv) == 1
    err = capsys.readouterr().err  # not "Unknown payload encoding": what it is, and the fix
    assert "its history is encrypted" in err and f"{ENV_VAR} is not set here" in err
    assert "demo --encrypt` prints its own" in err
    monkeypatch.setenv(ENV_VAR, f"k2:{new_key()}")
    assert await asyncio.to_thread(main, argv) == 1
    assert "add that key" in capsys.readouterr().err
    monkeypatch.setenv(ENV_VAR, f"k2:{new_key()},{CODEC_KEYS}")
    assert await asyncio.to_thread(main, argv) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5


async def test_cli_audit_of_an_unknown_workflow_exits_2(
    dev: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", "no-such-workflow", "--address", dev.address]
    assert await asyncio.to_thread(main, argv) == 2
    assert "was not found in namespace 'default'" in capsys.readouterr().err
