"""``duraguard``: the command line a person uses: run a server, see what waits for a yes,
approve or deny it with a signed decision, read a run's audit, make keys, serve the codec.

Every command is :func:`main` with a list of arguments, so tests call it directly. The
Temporal address and namespace come from ``TEMPORAL_ADDRESS`` / ``TEMPORAL_NAMESPACE`` (as
for the ``temporal`` CLI; a ``temporal.toml`` profile is read too), overridden by
``--address`` / ``--namespace``. Listings print aligned tables (colour only on a terminal)
or, with ``--json``, JSON for programs. Exit codes: 0 done, 1 the action failed or was
refused, 2 a usage mistake (the message says the fix), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from datetime import timedelta
from pathlib import Path
from typing import IO, Any, TypeVar

from ._wire import (
    DECIDE,
    PENDING_QUERY,
    SA_PENDING,
    SEARCH_ATTRIBUTES,
    PendingAsk,
    decided_by,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"

T = TypeVar("T")


class CliError(Exception):
    """A failure to report in one line, without a traceback, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------

_COLORS = {
    "allow": "32",
    "observe": "36",
    "mask": "35",
    "rewrite": "35",
    "deny": "31",
    "approve": "33",
    "halt": "1;31",
    "expired": "31",
}


def use_color(stream: IO[str]) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set or ``TERM=dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, color: bool) -> str:
    """Aligned columns; cells whose text names an action are coloured when ``color``."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str], header: bool = False) -> str:
        out = []
        for cell, width in zip(cells, widths, strict=True):
            padded = cell.ljust(width)
            code = "1" if header else _COLORS.get(cell)
            out.append(f"\x1b[{code}m{padded}\x1b[0m" if color and code else padded)
        return "  ".join(out).rstrip()

    return "\n".join([line(headers, header=True), *(line(r) for r in rows)])


def _emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False, default=str))


def _short(value: Any, limit: int = 48) -> str:
    text = (
        value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    )
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_duration(seconds: float) -> str:
    """``2h05m``, ``4m10s``, ``9s``, or ``expired``."""
    if seconds <= 0:
        return "expired"
    s = int(seconds)
    if s >= 86400:
        return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


# --------------------------------------------------------------------------------------------
# running async work from a synchronous main
# --------------------------------------------------------------------------------------------


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion; in a thread of its own if an event loop already runs here
    (``main`` called from async code or an async test)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
            return runner.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
                box["value"] = runner.run(coro)
        except BaseException as e:
            box["error"] = e

    t = threading.Thread(target=target, name="duraguard-cli")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------
# connecting
# --------------------------------------------------------------------------------------------


def _data_converter() -> Any:
    """pydantic's converter, with the AES-GCM codec when ``DURAGUARD_CODEC_KEYS`` is set."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from .codec import CodecError, codec_from_env

    try:
        codec = codec_from_env()
    except CodecError as e:
        raise CliError(str(e)) from None
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(pydantic_data_converter, payload_codec=codec)


def connect_config(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for ``Client.connect``: env config, then flags, then the defaults."""
    from temporalio.envconfig import ClientConfig

    try:
        config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    except Exception as e:  # a malformed temporal.toml
        raise CliError(f"cannot read the Temporal client configuration: {e}") from None
    config["target_host"] = (
        getattr(args, "address", None) or config.get("target_host") or DEFAULT_ADDRESS
    )
    config["namespace"] = (
        getattr(args, "namespace", None) or config.get("namespace") or DEFAULT_NAMESPACE
    )
    return config


async def _connect(args: argparse.Namespace) -> Any:
    from temporalio.client import Client

    config = connect_config(args)
    try:
        return await Client.connect(**config, data_converter=_data_converter())
    except CliError:
        raise
    except Exception as e:
        raise CliError(
            f"cannot reach Temporal at {config['target_host']} (namespace "
            f"{config['namespace']}): {e}. Start one with `duraguard server`, or set "
            "TEMPORAL_ADDRESS / pass --address",
            EXIT_FAILED,
        ) from None


def _rpc_problem(e: BaseException, workflow_id: str, namespace: str) -> CliError:
    """A client error as a one-line message with the fix."""
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
        return CliError(
            f"workflow {workflow_id!r} was not found in namespace {namespace!r}: {e.message}"
        )
    if isinstance(e, RPCError) and e.status == RPCStatusCode.DEADLINE_EXCEEDED:
        return CliError(
            f"{workflow_id}: no answer in time; is a worker running for its task queue?",
            EXIT_FAILED,
        )
    return CliError(f"{workflow_id}: {e}", EXIT_FAILED)


async def _pending_of(handle: Any, timeout: float) -> list[PendingAsk]:
    result = await handle.query(
        PENDING_QUERY, result_type=list[PendingAsk], rpc_timeout=timedelta(seconds=timeout)
    )
    return list(result)


# --------------------------------------------------------------------------------------------
# pending
# --------------------------------------------------------------------------------------------


async def _collect_pending(args: argparse.Namespace) -> tuple[list[PendingAsk], list[str]]:
    client = await _connect(args)
    handles = [client.get_workflow_handle(w) for w in args.workflow or ()]
    if not handles:
        query = f"{SA_PENDING} > 0 AND ExecutionStatus = 'Running'"
        try:
            async for wf in client.list_workflows(query):
                handles.append(client.get_workflow_handle(wf.id, run_id=wf.run_id))
        except Exception as e:
            raise CliError(
                f"cannot list workflows with {query!r}: {e}. Register duraguard's search "
                f"attributes ({', '.join(SEARCH_ATTRIBUTES)}): `duraguard server` does it, or "
                f"`temporal operator search-attribute create --name {SA_PENDING} --type Int`",
                EXIT_FAILED,
            ) from None
    asks: list[PendingAsk] = []
    problems: list[str] = []
    for handle in handles:
        try:
            asks.extend(await _pending_of(handle, args.timeout))
        except Exception as e:
            problems.append(str(_rpc_problem(e, handle.id, client.namespace)))
    return asks, problems


def cmd_pending(args: argparse.Namespace) -> int:
    """The calls waiting for a person, across workflows."""
    asks, problems = _run(_collect_pending(args))
    for p in problems:
        print(f"duraguard: warning: {p}", file=sys.stderr)
    now = time.time()
    if args.json:
        _emit_json(
            [
                {**a.model_dump(mode="json"), "expires_in": max(0.0, a.expires_at - now)}
                for a in asks
            ]
        )
        return EXIT_OK
    if not asks:
        print("nothing is waiting for a person")
        return EXIT_OK
    headers = ["WORKFLOW", "CALL", "TOOL", "ARGS", "ROLE", "ASKED BY", "WHY", "EXPIRES IN"]
    rows = [
        [
            a.workflow_id,
            a.call_id,
            a.tool or f"check {a.label or '-'}",
            _short(a.args),
            a.role or "any",
            decided_by(a.asked_by, a.check),
            _short(a.reason or "-", 60),
            format_duration(a.expires_at - now),
        ]
        for a in asks
    ]
    print(render_table(headers, rows, color=use_color(sys.stdout)))
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# approve / deny
# --------------------------------------------------------------------------------------------


def parse_edits(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; a value that parses as JSON is that JSON, else the string."""
    edits: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--edit {item!r} must be KEY=VALUE, e.g. --edit amount=25")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        edits[key.strip()] = value
    return edits


def load_key(path: str) -> Any:
    """The Ed25519 private key in ``path``, or a :class:`CliError` saying what is wrong."""
    from .approvals import load_private_key
    from .errors import ConfigurationError

    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise CliError(
            f"key file {p} does not exist; make one with `duraguard keygen NAME`"
        ) from None
    except OSError as e:
        raise CliError(f"cannot read key file {p}: {e.strerror}") from None
    if b"PUBLIC KEY" in data:
        raise CliError(
            f"{p} is a public key; sign with the private key (NAME.pem, not NAME.pub.pem)"
        )
    try:
        return load_private_key(data)
    except ConfigurationError as e:
        raise CliError(f"{p}: {e}") from None
    except (ValueError, TypeError) as e:
        raise CliError(f"{p} is not an unencrypted PEM private key ({e})") from None


def approver_name(args: argparse.Namespace) -> str:
    """``--as NAME``, else the key file's name without ``.pem``."""
    return args.as_name or Path(args.key).name.removesuffix(".pem")


async def _decide(args: argparse.Namespace, kind: str) -> int:
    from .approvals import call_digest, decision_for

    key = load_key(args.key)
    edits = parse_edits(getattr(args, "edit", None) or ()) or None
    if args.ttl <= 0:
        raise CliError(f"--ttl must be a positive number of seconds; got {args.ttl}")
    client = await _connect(args)
    handle = client.get_workflow_handle(args.workflow)
    try:
        asks = await _pending_of(handle, args.timeout)
    except Exception as e:
        raise _rpc_problem(e, args.workflow, client.namespace) from None
    ask = next((a for a in asks if a.call_id == args.call), None)
    if ask is None:
        waiting = ", ".join(a.call_id for a in asks) or "none"
        raise CliError(f"call {args.call!r} is not waiting on {args.workflow} (waiting: {waiting})")
    if ask.call_digest != call_digest(ask.tool, ask.args):
        print(
            "duraguard: warning: the parked call's digest does not match its tool and "
            "arguments; the workflow will likely refuse this decision",
            file=sys.stderr,
        )
    decision = decision_for(
        ask,
        decision=kind,  # type: ignore[arg-type]
        approver=approver_name(args),
        edits=edits,
        reason=args.reason,
        ttl_seconds=args.ttl,
        private_key=key,
    )
    send = _send_signal if args.signal else _send_update
    return await send(handle, decision, args, client.namespace)


async def _send_signal(handle: Any, decision: Any, args: argparse.Namespace, namespace: str) -> int:
    try:
        await handle.signal(DECIDE, decision)
    except Exception as e:
        raise _rpc_problem(e, args.workflow, namespace) from None
    if args.json:
        _emit_json({"sent": "signal", "decision": decision.model_dump(mode="json")})
    else:
        print(
            f"{decision.decision} for {decision.call_id} on {decision.workflow_id} sent by signal "
            f"as {decision.approver}; the workflow checks it in a recorded step "
            f"(see `duraguard audit {decision.workflow_id}`)"
        )
    return EXIT_OK


async def _send_update(handle: Any, decision: Any, args: argparse.Namespace, namespace: str) -> int:
    from temporalio.client import (
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    )

    from .approvals import ApprovalCheck

    accepted, why = False, ""
    try:
        check = await handle.execute_update(
            DECIDE,
            decision,
            result_type=ApprovalCheck,
            rpc_timeout=timedelta(seconds=args.timeout),
        )
        accepted, why = bool(check.ok), check.reason
    except WorkflowUpdateFailedError as e:
        why = str(getattr(e.cause, "message", None) or e.cause or e)
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        raise CliError(
            f"{args.workflow}: no answer within {args.timeout:g}s; is a worker running for its "
            "task queue? (or send with --signal)",
            EXIT_FAILED,
        ) from None
    except Exception as e:
        raise _rpc_problem(e, args.workflow, namespace) from None
    if args.json:
        _emit_json(
            {
                "sent": "update",
                "accepted": accepted,
                "reason": why or None,
                "decision": decision.model_dump(mode="json"),
            }
        )
    else:
        what = f"{decision.decision} for {decision.call_id} on {decision.workflow_id}"
        print(f"{what}: accepted" if accepted else f"{what}: not accepted: {why}")
    return EXIT_OK if accepted else EXIT_FAILED


def cmd_approve(args: argparse.Namespace) -> int:
    """Say yes to a parked call, signed with your key."""
    return _run(_decide(args, "approve"))


def cmd_deny(args: argparse.Namespace) -> int:
    """Say no to a parked call, signed with your key."""
    return _run(_decide(args, "deny"))


# --------------------------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------------------------


async def _audit(args: argparse.Namespace) -> list[Any]:
    from .audit import audit_records
    from .codec import CodecError

    client = await _connect(args)
    handle = client.get_workflow_handle(args.workflow, run_id=args.run_id)
    try:
        return await audit_records(handle, client.data_converter)
    except CodecError as e:
        raise CliError(f"cannot decode {args.workflow}'s history: {e}", EXIT_FAILED) from None
    except Exception as e:
        raise _rpc_problem(e, args.workflow, client.namespace) from None


def audit_json(records: Sequence[Any], *, reveal: bool) -> list[dict[str, Any]]:
    """Records as JSON objects; reasons and values only when ``reveal``."""
    out = []
    for r in records:
        item = r.row.model_dump(mode="json")
        item.update(event_id=r.event_id, activity=r.activity, local=r.local)
        if reveal:
            item["value"] = r.value
        else:
            item.pop("reason", None)
        out.append(item)
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    """Every verdict of a run, read from its history."""
    records = _run(_audit(args))
    if args.json:
        _emit_json(audit_json(records, reveal=args.reveal))
        return EXIT_OK
    if not records:
        print(f"no duraguard verdicts in the history of {args.workflow}")
        return EXIT_OK
    headers = ["TURN", "CALL", "TOOL", "PLACEMENT", "ACTION", "DECIDED BY", "OUTCOME", "APPROVER"]
    if args.reveal:
        headers += ["REASON", "VALUE"]
    rows = []
    for r in records:
        row = r.row
        cells = [
            str(row.turn),
            row.call_id or "-",
            row.tool or "-",
            row.placement,
            row.action,
            row.decided_by,
            row.outcome,
            row.approver or "-",
        ]
        if args.reveal:
            cells += [row.reason or "-", "-" if r.value is None else _short(r.value, 60)]
        rows.append(cells)
    print(render_table(headers, rows, color=use_color(sys.stdout)))
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# keygen
# --------------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def approvers_entry(name: str, public_key_b64: str, roles: Sequence[str]) -> str:
    """The approvers-file entry (YAML) for one person."""
    return f"{name}:\n  public_key: {public_key_b64}\n  roles: [{', '.join(roles)}]\n"


def cmd_keygen(args: argparse.Namespace) -> int:
    """A new Ed25519 key pair for an approver, and their approvers-file entry."""
    import base64

    from .approvals import generate_keypair, load_public_key

    name = args.name
    if not _NAME.match(name):
        raise CliError(
            f"name {name!r} must start with a letter or digit and hold only letters, digits, "
            "'.', '_' or '-' (it names the files and the approver)"
        )
    roles = [r.strip() for r in (args.roles or "").split(",") if r.strip()]
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    private_path, public_path = directory / f"{name}.pem", directory / f"{name}.pub.pem"
    for p in (private_path, public_path):
        if p.exists() and not args.force:
            raise CliError(f"{p} already exists; pick another name, or pass --force to replace it")
    private_pem, public_pem = generate_keypair()
    _write(private_path, private_pem, 0o600)
    _write(public_path, public_pem, 0o644)
    b64 = base64.b64encode(load_public_key(public_pem)).decode()
    entry = approvers_entry(name, b64, roles)
    if args.json:
        _emit_json(
            {
                "name": name,
                "private_key": str(private_path),
                "public_key_file": str(public_path),
                "public_key": b64,
                "roles": roles,
                "entry": entry,
            }
        )
        return EXIT_OK
    print(f"wrote {private_path} (private, keep it to yourself) and {public_path}")
    print("add this entry to the workers' approvers file:\n")
    print(entry, end="")
    return EXIT_OK


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a file created with ``mode`` (never briefly more open than that)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


# --------------------------------------------------------------------------------------------
# codec
# --------------------------------------------------------------------------------------------


def cmd_codec_keygen(args: argparse.Namespace) -> int:
    """A new AES key, as a ``DURAGUARD_CODEC_KEYS`` entry."""
    from .codec import ENV_VAR, CodecError, new_key

    if not re.match(r"^[A-Za-z0-9._-]{1,64}$", args.key_id):
        raise CliError(f"key id {args.key_id!r} must be 1-64 letters, digits, '.', '_' or '-'")
    try:
        entry = f"{args.key_id}:{new_key(args.bits)}"
    except CodecError as e:
        raise CliError(str(e)) from None
    if args.json:
        _emit_json({"key_id": args.key_id, "entry": entry, "env": ENV_VAR})
        return EXIT_OK
    print(entry)
    print(
        f"# put it first in ${ENV_VAR} (comma-separated, older keys after it)",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_codec_server(args: argparse.Namespace) -> int:
    """Serve the Web UI's codec endpoint for the AES-GCM codec."""
    from .codec import DEFAULT_CORS_ORIGINS, AesGcmCodec, CodecError, CodecServer

    try:
        codec = AesGcmCodec.from_env()
    except CodecError as e:
        raise CliError(str(e)) from None
    try:
        server = CodecServer(
            codec, port=args.port, cors_origins=args.cors_origin or DEFAULT_CORS_ORIGINS
        )
    except OSError as e:
        raise CliError(
            f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}; pick another --port",
            EXIT_FAILED,
        ) from None
    print(f"codec endpoint {server.url} (keys: {', '.join(codec.key_ids)})")
    print(f"allowed origins: {', '.join(server.cors_origins)}")
    print("set it as the codec endpoint in the Web UI, or `duraguard server --codec-endpoint URL`")
    print("Ctrl-C to stop", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# server
# --------------------------------------------------------------------------------------------


async def _serve(args: argparse.Namespace) -> int:
    from .server import DevServer, ServerError

    srv = DevServer(
        db_filename=args.db_filename or None,
        port=args.port,
        ui=not args.headless,
        ui_port=args.ui_port or (args.port + 1000 if not args.headless else None),
        ip=args.ip,
        namespace=args.namespace or DEFAULT_NAMESPACE,
        codec_endpoint=args.codec_endpoint,
        log_level=args.log_level,
    )
    task = asyncio.current_task()
    if task is not None and hasattr(signal, "SIGTERM"):
        # SIGINT too: a process started in the background inherits SIGINT ignored, and Python
        # then installs no KeyboardInterrupt for it.
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
    try:
        await srv.start()
    except ServerError as e:
        raise CliError(str(e), EXIT_FAILED) from None
    try:
        _announce(srv)
        code = await srv.wait()
        print(f"the Temporal dev server exited by itself (code {code})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        await srv.stop()


def _announce(srv: Any) -> None:
    where = f"state in {srv.db_filename}" if srv.db_filename else "state in memory (lost on stop)"
    print(f"Temporal dev server at {srv.address} (namespace {srv.namespace}), {where}")
    if srv.ui_url:
        print(f"Web UI: {srv.ui_url}")
    attrs = ", ".join(f"{k} ({v})" for k, v in sorted(srv.search_attributes.items()))
    print(f"search attributes: {attrs}")
    print(f"export TEMPORAL_ADDRESS={srv.address}")
    print("Ctrl-C to stop", flush=True)


def cmd_server(args: argparse.Namespace) -> int:
    """Run the Temporal dev server (SQLite, Web UI) with duraguard's search attributes."""
    from .server import ServerError, accepts_connections, find_temporal_binary

    try:
        find_temporal_binary()
    except ServerError as e:
        raise CliError(str(e)) from None
    for port, flag in ((args.port, "--port"), (args.ui_port or args.port + 1000, "--ui-port")):
        if args.headless and flag == "--ui-port":
            continue
        if accepts_connections(args.ip, port):
            raise CliError(
                f"{args.ip}:{port} is already in use (another Temporal server?); "
                f"stop it or pick another {flag}"
            )
    try:
        return _run(_serve(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("stopped")
        return EXIT_OK


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the support-desk demo (``duraguard.demo``)."""
    import importlib

    try:
        demo = importlib.import_module("duraguard.demo")
    except ModuleNotFoundError as e:
        if e.name != "duraguard.demo":
            raise  # the demo is there but something it imports is not: show that
        raise CliError(
            "the demo is not part of this installation (duraguard/demo.py is missing); "
            "install a duraguard release that ships it",
            EXIT_FAILED,
        ) from None
    return int(demo.main(list(args.demo_args)) or 0)


# --------------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------------


def _connection_flags() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--address",
        default=argparse.SUPPRESS,
        help=f"Temporal frontend host:port (env TEMPORAL_ADDRESS, default {DEFAULT_ADDRESS})",
    )
    p.add_argument(
        "--namespace",
        default=argparse.SUPPRESS,
        help=f"namespace (env TEMPORAL_NAMESPACE, default {DEFAULT_NAMESPACE})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for a workflow's answer (default 30)",
    )
    return p


def _decide_parser(sub: Any, name: str, conn: argparse.ArgumentParser, helptext: str) -> Any:
    p = sub.add_parser(name, parents=[conn], help=helptext, description=helptext)
    p.add_argument("workflow", help="workflow id")
    p.add_argument("call", help="call id (see `duraguard pending`)")
    p.add_argument("--key", required=True, help="your private key file (from `duraguard keygen`)")
    p.add_argument(
        "--as", dest="as_name", metavar="NAME", help="approver name (default: key file name)"
    )
    p.add_argument("--reason", help="why; goes to the model and the audit")
    p.add_argument("--ttl", type=float, default=3600.0, help="seconds the decision stays valid")
    p.add_argument("--signal", action="store_true", help="send by signal (default: update)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def build_parser() -> argparse.ArgumentParser:
    """The ``duraguard`` argument parser."""
    conn = _connection_flags()
    parser = argparse.ArgumentParser(
        prog="duraguard",
        description="Guardrails for AI agents on Temporal: approvals, audit, keys, dev server.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("pending", parents=[conn], help="calls waiting for a person")
    p.add_argument("--workflow", "-w", action="append", help="only this workflow (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_pending)

    p = _decide_parser(sub, "approve", conn, "say yes to a parked call, signed")
    p.add_argument(
        "--edit", action="append", metavar="KEY=VALUE", help="change an argument (JSON value)"
    )
    p.set_defaults(func=cmd_approve)
    p = _decide_parser(sub, "deny", conn, "say no to a parked call, signed")
    p.set_defaults(func=cmd_deny)

    p = sub.add_parser("audit", parents=[conn], help="every verdict of a run, from its history")
    p.add_argument("workflow", help="workflow id")
    p.add_argument("--run-id", help="a specific run (default: the latest)")
    p.add_argument("--reveal", action="store_true", help="also show reasons and replaced values")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("keygen", help="make an approver's Ed25519 key pair")
    p.add_argument("name", help="the approver's name (names the files)")
    p.add_argument("--dir", default=".", help="where to write NAME.pem and NAME.pub.pem")
    p.add_argument("--roles", default="", help="comma-separated roles, e.g. manager,finance")
    p.add_argument("--force", action="store_true", help="replace existing files")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_keygen)

    p = sub.add_parser("server", help="run the Temporal dev server with duraguard's settings")
    p.add_argument("--db-filename", default="duraguard.db", help="SQLite file ('' for in memory)")
    p.add_argument("--port", type=int, default=7233, help="gRPC port (default 7233)")
    p.add_argument("--ui-port", type=int, default=None, help="Web UI port (default port+1000)")
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--headless", action="store_true", help="no Web UI")
    p.add_argument("--codec-endpoint", help="codec server URL for the Web UI")
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="namespace to create")
    p.add_argument("--log-level", default="warn", help="server log level (default warn)")
    p.set_defaults(func=cmd_server)

    p = sub.add_parser("codec-server", help="serve the Web UI's codec endpoint (AES-GCM)")
    p.add_argument("--port", type=int, default=8081, help="port (default 8081; 0 picks one)")
    p.add_argument(
        "--cors-origin",
        action="append",
        metavar="URL",
        help="Web UI origin allowed to call (repeatable; default http://localhost:8233)",
    )
    p.set_defaults(func=cmd_codec_server)

    p = sub.add_parser("codec-keygen", help="make an AES key for DURAGUARD_CODEC_KEYS")
    p.add_argument("key_id", nargs="?", default="k1", help="key id (default k1)")
    p.add_argument("--bits", type=int, default=256, choices=(128, 192, 256))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_codec_keygen)

    # Listed for --help; main() hands everything after `demo` to duraguard.demo.main.
    sub.add_parser("demo", help="run the support-desk demo (its own flags follow)")
    return parser


Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    """Run ``duraguard`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv[:1] == ["demo"]:  # everything after `demo` is the demo's own
        args = argparse.Namespace(func=cmd_demo, demo_args=argv[1:])
    else:
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help, or a usage error argparse already printed
            return e.code if isinstance(e.code, int) else EXIT_USAGE
    func: Handler | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return func(args)
    except CliError as e:
        print(f"duraguard: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
