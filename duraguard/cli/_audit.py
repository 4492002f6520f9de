"""``duraguard audit``: every verdict of a run, read from its history."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

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
    from ..audit import audit_records
    from ..codec import CodecError

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
