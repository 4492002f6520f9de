"""What every command shares: exit codes, errors, tables, JSON, the connection."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import threading
from collections.abc import Coroutine, Sequence
from datetime import timedelta
from typing import IO, Any, TypeVar

from .._history import asks_from_history
from .._updates import abort_message, aborted
from .._wire import (
    PENDING_QUERY,
    PendingAsk,
)
from ..codec import ENCODING, ENV_VAR, CodecError, codec_from_env

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

    if ENCODING.decode() in str(e) and "Unknown payload encoding" in str(e):
        return CliError(
            f"{workflow_id}: its history is encrypted (duraguard's AES-GCM codec) and "
            f"{ENV_VAR} is not set here: set it to the keys the workers use, e.g. "
            f"`export {ENV_VAR}=k1:<base64 key>` (`duraguard demo --encrypt` prints its own)",
            EXIT_FAILED,
        )

    if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
        return CliError(
            f"workflow {workflow_id!r} was not found in namespace {namespace!r}: {e.message}"
        )
    if aborted(e):
        return CliError(f"{workflow_id}: {abort_message('the decision')}", EXIT_FAILED)
    if isinstance(e, RPCError) and e.status in (
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,  # what the SDK reports when a call's rpc_timeout expires
    ):
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


async def _asks_in_history(client: Any, handle: Any) -> list[PendingAsk]:
    """The asks a run left open, read from its history (no worker needed)."""
    history = await handle.fetch_history()
    return await asks_from_history(history, client.data_converter)
