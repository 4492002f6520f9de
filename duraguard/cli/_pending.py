"""``duraguard pending``: the calls waiting for a person, across workflows.

It never says "nothing is waiting" when it could not look. Runs are found by the
``DuraguardPending`` search attribute (or named with ``-w``); each is asked with the
``duraguard.pending`` query, and when no worker answers, its asks are read from its history
(:func:`duraguard._history.asks_from_history`). When the search attribute is not registered,
the running workflows' histories are read instead (up to :data:`DEFAULT_SCAN` of them). Whatever could not be
seen is said on stderr, and the exit code is 1 when the list may be incomplete: 0 means every
run that could hold an ask was read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from .._wire import (
    SA_PENDING,
    SEARCH_ATTRIBUTES,
    PendingAsk,
    decided_by,
)
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    _asks_in_history,
    _connect,
    _emit_json,
    _pending_of,
    _rpc_problem,
    _run,
    _short,
    format_duration,
    render_table,
    use_color,
)

DEFAULT_SCAN = 200
"""Running workflows whose histories are read when they cannot be found by search attribute."""


@dataclass
class Seen:
    """What ``pending`` saw: the asks (each with how it was read), and what it could not see."""

    asks: list[tuple[PendingAsk, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Warnings: what was read another way than asked, what was not read at all."""
    complete: bool = True
    """Whether every run that could hold an ask was read (by query or from its history)."""
    runs: int = 0

    def missed(self, note: str) -> None:
        self.notes.append(note)
        self.complete = False


def _unregistered(e: BaseException) -> bool:
    from temporalio.service import RPCError, RPCStatusCode

    return (
        isinstance(e, RPCError)
        and e.status == RPCStatusCode.INVALID_ARGUMENT
        and "search attribute" in str(e)
    )


async def _read_one(client: Any, handle: Any, timeout: float, seen: Seen) -> None:
    """One run's asks: by query, else from its history."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        seen.asks.extend((a, "query") for a in await _pending_of(handle, timeout))
        return
    except Exception as e:
        if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
            seen.missed(str(_rpc_problem(e, handle.id, client.namespace)))
            return
        why = _why(e, timeout)
    try:
        asks = await _asks_in_history(client, handle)
    except Exception as e:
        seen.missed(
            f"{handle.id}: no answer to the query ({why}) and its history could not be read "
            f"either ({e}); its asks are not listed"
        )
        return
    seen.notes.append(
        f"{handle.id}: no answer to the query ({why}); its {len(asks)} open ask(s) were read "
        "from its history (a decision sent by signal and not yet checked by a worker still "
        "shows as open)"
    )
    seen.asks.extend((a, "history") for a in asks)


def _why(e: BaseException, timeout: float) -> str:
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(e, RPCError) and e.status in (
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
    ):
        return f"no worker answered within {timeout:g}s"
    return str(e) or type(e).__name__


async def _scan(client: Any, limit: int, seen: Seen) -> None:
    """Without the search attribute: read the history of each running workflow."""
    handles = []
    try:
        async for wf in client.list_workflows("ExecutionStatus = 'Running'", limit=limit + 1):
            handles.append(client.get_workflow_handle(wf.id, run_id=wf.run_id))
    except Exception as e:
        seen.missed(f"cannot list the running workflows either: {e}")
        return
    if len(handles) > limit:
        handles = handles[:limit]
        seen.missed(
            f"more than {limit} workflows are running; only the histories of {limit} were read "
            f"(register {SA_PENDING} to find the ones waiting, or name runs with -w)"
        )

    async def one(handle: Any) -> None:
        try:
            seen.asks.extend((a, "history") for a in await _asks_in_history(client, handle))
        except Exception as e:
            seen.missed(f"{handle.id}: its history could not be read ({e})")

    seen.runs = len(handles)
    await asyncio.gather(*(one(h) for h in handles))


async def _collect_pending(args: argparse.Namespace) -> Seen:
    client = await _connect(args)
    seen = Seen()
    handles = [client.get_workflow_handle(w) for w in args.workflow or ()]
    if not handles:
        query = f"{SA_PENDING} > 0 AND ExecutionStatus = 'Running'"
        try:
            async for wf in client.list_workflows(query):
                handles.append(client.get_workflow_handle(wf.id, run_id=wf.run_id))
        except Exception as e:
            fix = (
                f"register duraguard's search attributes ({', '.join(SEARCH_ATTRIBUTES)}): "
                "`duraguard server` does it, or `temporal operator search-attribute create "
                f"--name {SA_PENDING} --type Int`"
            )
            if not _unregistered(e):
                seen.missed(f"cannot list workflows with {query!r}: {e}; {fix}")
                return seen
            seen.notes.append(
                f"{SA_PENDING} is not registered in namespace {client.namespace!r}, so runs "
                f"waiting for a person cannot be found by it; reading the histories of the "
                f"running workflows instead. To fix it, {fix}"
            )
            await _scan(client, DEFAULT_SCAN, seen)
            return seen
    seen.runs = len(handles)
    await asyncio.gather(*(_read_one(client, h, args.timeout, seen) for h in handles))
    return seen


def cmd_pending(args: argparse.Namespace) -> int:
    """The calls waiting for a person, across workflows."""
    seen = _run(_collect_pending(args))
    for note in seen.notes:
        print(f"duraguard: warning: {note}", file=sys.stderr)
    code = EXIT_OK if seen.complete else EXIT_FAILED
    now = time.time()
    if args.json:
        _emit_json(
            [
                {
                    **a.model_dump(mode="json"),
                    "expires_in": max(0.0, a.expires_at - now),
                    "read_from": source,
                }
                for a, source in seen.asks
            ]
        )
        return code
    if not seen.asks:
        if not seen.complete:
            print("no ask could be seen, but the list is incomplete: see the warnings above")
        elif args.workflow:
            print(f"nothing is waiting for a person in {', '.join(args.workflow)}")
        else:
            print(
                f"nothing is waiting for a person in runs that publish {SA_PENDING} (a run "
                "whose workers do not set DuraguardPlugin(search_attributes=True) shows only "
                "when named with -w)"
            )
        return code
    headers = ["WORKFLOW", "CALL", "TOOL", "ARGS", "ROLE", "ASKED BY", "WHY", "EXPIRES IN"]
    rows = [
        [
            a.workflow_id + ("*" if source == "history" else ""),
            a.call_id,
            a.tool or f"check {a.label or '-'}",
            _short(a.args),
            a.role or "any",
            decided_by(a.asked_by, a.check),
            _short(a.reason or "-", 60),
            format_duration(a.expires_at - now),
        ]
        for a, source in seen.asks
    ]
    print(render_table(headers, rows, color=use_color(sys.stdout)))
    if any(source == "history" for _, source in seen.asks):
        print("* read from the run's history: no worker answered")
    if not seen.complete:
        print("the list is incomplete: see the warnings above")
    return code
