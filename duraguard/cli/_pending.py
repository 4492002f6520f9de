"""``duraguard pending``: the calls waiting for a person, across workflows."""

from __future__ import annotations

import argparse
import sys
import time

from .._wire import (
    SA_PENDING,
    SEARCH_ATTRIBUTES,
    PendingAsk,
    decided_by,
)
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
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
