"""``duraguard inbox``: the approver's inbox, a web page and a JSON API (the ``inbox`` extra)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import ConfigurationError
from ._common import EXIT_FAILED, EXIT_OK, CliError, _connect, _emit_json, _run

DEFAULT_PORT = 8090
DEFAULT_UI = "http://localhost:8233"


def add_inbox_parser(sub: Any, conn: argparse.ArgumentParser) -> None:
    """Register ``duraguard inbox`` and its flags."""
    p = sub.add_parser(
        "inbox",
        parents=[conn],
        help="serve the approver's inbox: a web page and a JSON API",
        description=(
            "Serve the approver's inbox: every call waiting for a person, approved or denied "
            "with a decision signed in the browser (the key never reaches the server). Binds "
            "127.0.0.1 unless told otherwise; any other address needs --access."
        ),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)"
    )
    p.add_argument(
        "--access",
        metavar="FILE",
        help="who may see, read or decide: people with tokens, or a trusted proxy header",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a Host name the inbox answers to besides loopback ones (repeatable)",
    )
    p.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    p.add_argument("--tls-key", metavar="FILE", help="the certificate's private key")
    p.add_argument(
        "--ui-url",
        default=DEFAULT_UI,
        help=f"the Temporal Web UI, for links to each run (default {DEFAULT_UI}; '' for none)",
    )
    p.add_argument("--poll", type=float, default=1.0, help="seconds between refreshes (default 1)")
    p.add_argument(
        "--new-token",
        metavar="NAME",
        help="print a new token for NAME and its access-file entry, then exit",
    )
    p.add_argument(
        "--rights",
        default="decide",
        choices=("see", "read", "decide"),
        help="with --new-token: see (no values), read (values) or decide (default)",
    )
    p.add_argument("--json", action="store_true", help="with --new-token: print JSON")
    p.set_defaults(func=cmd_inbox)


def _inbox_module() -> Any:
    try:
        from .. import inbox
    except ImportError as e:
        raise CliError(f"{e}", EXIT_FAILED) from None
    return inbox


def _new_token(args: argparse.Namespace) -> int:
    inbox = _inbox_module()
    token = inbox.new_token()
    digest = inbox.token_digest(token)
    entry = f"people:\n  {args.new_token}: {{token_sha256: {digest}, rights: {args.rights}}}\n"
    if args.json:
        _emit_json({"name": args.new_token, "token": token, "token_sha256": digest, "entry": entry})
        return EXIT_OK
    print(f"token for {args.new_token} (give it to them; it is shown once): {token}")
    print("add this to the access file (only the token's SHA-256 is kept):\n")
    print(entry, end="")
    return EXIT_OK


def cmd_inbox(args: argparse.Namespace) -> int:
    """Serve the approver's inbox until Ctrl-C."""
    if args.new_token:
        return _new_token(args)
    inbox = _inbox_module()
    try:
        access = inbox.Access.from_file(args.access) if args.access else inbox.Access.open()
    except ConfigurationError as e:
        raise CliError(str(e)) from None
    if access.is_open and not inbox.is_loopback(args.host):
        raise CliError(
            f"--host {args.host} would let other machines decide with no sign-in; keep the "
            "default 127.0.0.1, or pass --access FILE (tokens: `duraguard inbox --new-token "
            "NAME`; or a trusted proxy header, see docs/inbox.md)"
        )
    if bool(args.tls_cert) != bool(args.tls_key):
        raise CliError("--tls-cert and --tls-key go together")
    if not inbox.is_loopback(args.host) and not args.tls_cert:
        print(
            "duraguard: note: browsers sign only on a secure page (https, or a loopback "
            "address); put an HTTPS proxy in front, or pass --tls-cert/--tls-key",
            file=sys.stderr,
        )
    try:
        return _run(_serve(args, inbox, access))
    except KeyboardInterrupt:
        return EXIT_OK


async def _serve(args: argparse.Namespace, inbox: Any, access: Any) -> int:
    client = await _connect(args)
    app = inbox.create_app(
        client,
        access=access,
        ui_url=args.ui_url or None,
        poll=args.poll,
        update_timeout=args.timeout,
        allowed_hosts=args.allowed_host or (),
        secure_cookies=bool(args.tls_cert),
    )
    try:
        server = inbox.InboxServer(
            app,
            host=args.host,
            port=args.port,
            ssl_certfile=args.tls_cert,
            ssl_keyfile=args.tls_key,
        )
        await server.start()
    except inbox.InboxError as e:
        raise CliError(str(e), EXIT_FAILED) from None
    who = "open: everyone who reaches it decides" if access.is_open else f"access: {args.access}"
    print(f"duraguard inbox at {server.url} ({who})")
    print(f"Temporal {client.service_client.config.target_host}, namespace {client.namespace}")
    print("Ctrl-C to stop", flush=True)
    try:
        await server.wait()
    finally:
        await server.stop()
    print("stopped")
    return EXIT_OK
