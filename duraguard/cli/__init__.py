"""``duraguard``: the command line a person uses: run a server, see what waits for a yes,
approve or deny it with a signed decision, read a run's audit, make keys, serve the codec,
check a deployment (``doctor``).

Every command is :func:`main` with a list of arguments, so tests call it directly. The
Temporal address and namespace come from ``TEMPORAL_ADDRESS`` / ``TEMPORAL_NAMESPACE`` (as
for the ``temporal`` CLI; a ``temporal.toml`` profile is read too), overridden by
``--address`` / ``--namespace``. Listings print aligned tables (colour only on a terminal)
or, with ``--json``, JSON for programs. Exit codes: 0 done, 1 the action failed or was
refused, 2 a usage mistake (the message says the fix), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ._audit import cmd_audit
from ._common import (
    DEFAULT_ADDRESS,
    DEFAULT_NAMESPACE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    connect_config,
    format_duration,
    render_table,
)
from ._decide import cmd_approve, cmd_deny, parse_edits
from ._doctor import add_doctor_parser
from ._inbox import add_inbox_parser
from ._keys import cmd_codec_keygen, cmd_keygen
from ._pending import cmd_pending
from ._serve import cmd_codec_server, cmd_demo, cmd_server

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

    _add_key_and_server_parsers(sub)
    add_inbox_parser(sub, conn)
    add_doctor_parser(sub, conn)

    # Listed for --help; main() hands everything after `demo` to duraguard.demo.main.
    sub.add_parser("demo", help="run the support-desk demo (its own flags follow)")
    return parser


def _add_key_and_server_parsers(sub: Any) -> None:
    """``keygen``, ``server``, ``codec-server`` and ``codec-keygen``: the set-up commands."""
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
        "--ip",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); beyond loopback $DURAGUARD_CODEC_TOKEN is required",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        metavar="URL",
        help="Web UI origin allowed to call (repeatable; default http://localhost:8233)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="Host header name accepted besides the loopback ones (repeatable): the name a "
        "proxy or another machine reaches the endpoint by",
    )
    p.set_defaults(func=cmd_codec_server)

    p = sub.add_parser("codec-keygen", help="make an AES key for DURAGUARD_CODEC_KEYS")
    p.add_argument("key_id", nargs="?", default="k1", help="key id (default k1)")
    p.add_argument("--bits", type=int, default=256, choices=(128, 192, 256))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_codec_keygen)


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


__all__ = [
    "CliError",
    "build_parser",
    "connect_config",
    "format_duration",
    "main",
    "parse_edits",
    "render_table",
]
