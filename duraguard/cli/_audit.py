"""``duraguard audit``: every verdict of a run, read from its history."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..audit import audit_records
from ..codec import CodecError
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    _connect,
    _emit_json,
    _rpc_problem,
    _run,
    _short,
    render_table,
    use_color,
)

# --------------------------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------------------------


async def _audit(args: argparse.Namespace) -> list[Any]:
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
        item.update(event_id=r.event_id, activity=r.activity, local=r.local, preview=r.preview)
        if reveal:
            item["value"] = r.value
        else:
            item.pop("reason", None)
        out.append(item)
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    """Every verdict of a run, read from its history; previews of a person's edits (which
    decided nothing) in a table of their own."""
    records = _run(_audit(args))
    if args.json:
        _emit_json(audit_json(records, reveal=args.reveal))
        return EXIT_OK
    if not records:
        print(f"no duraguard verdicts in the history of {args.workflow}")
        return EXIT_OK
    verdicts = [r for r in records if not r.preview]
    previews = [r for r in records if r.preview]
    color = use_color(sys.stdout)
    if verdicts:
        print(_table(verdicts, reveal=args.reveal, color=color))
    if previews:
        print(
            f"{chr(10) if verdicts else ''}edit previews (what the guardrails said of a person's "
            "edits before they signed; they decided nothing):"
        )
        print(_table(previews, reveal=args.reveal, color=color))
    return EXIT_OK


def _table(records: Sequence[Any], *, reveal: bool, color: bool) -> str:
    headers = ["TURN", "CALL", "TOOL", "PLACEMENT", "ACTION", "DECIDED BY", "OUTCOME", "APPROVER"]
    if reveal:
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
        if reveal:
            cells += [row.reason or "-", "-" if r.value is None else _short(r.value, 60)]
        rows.append(cells)
    return render_table(headers, rows, color=color)
