"""``duraguard server`` / ``codec-server`` / ``demo``: servers a developer runs."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from ..codec import DEFAULT_CORS_ORIGINS, TOKEN_ENV, AesGcmCodec, CodecError, CodecServer
from ..server import DevServer, ServerError, accepts_connections, find_temporal_binary
from ._common import (
    DEFAULT_NAMESPACE,
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    _run,
)


def cmd_codec_server(args: argparse.Namespace) -> int:
    """Serve the Web UI's codec endpoint for the AES-GCM codec.

    Beyond loopback it requires ``Authorization: Bearer $DURAGUARD_CODEC_TOKEN`` on every
    request (and on loopback too when that variable is set)."""
    import os

    host = getattr(args, "ip", None) or "127.0.0.1"
    try:
        codec = AesGcmCodec.from_env()
        server = CodecServer(
            codec,
            port=args.port,
            cors_origins=args.cors_origin or DEFAULT_CORS_ORIGINS,
            host=host,
            token=os.environ.get(TOKEN_ENV, "").strip() or None,
            allowed_hosts=getattr(args, "allowed_host", None) or (),
        )
    except CodecError as e:
        raise CliError(str(e)) from None
    except OSError as e:
        raise CliError(
            f"cannot listen on {host}:{args.port}: {e.strerror}; pick another --port",
            EXIT_FAILED,
        ) from None
    print(f"codec endpoint {server.url} (keys: {', '.join(codec.key_ids)})")
    print(f"allowed origins: {', '.join(server.cors_origins)}")
    hosts = (
        "any (the token guards it)" if server.any_host else ", ".join(sorted(server.allowed_hosts))
    )
    print(f"answers to Host: {hosts}")
    if server.requires_token:
        print(f"callers must send Authorization: Bearer ${TOKEN_ENV}")
    else:
        print(f"open to this machine only (set ${TOKEN_ENV} to require a bearer token)")
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
