"""``duraguard approve`` / ``deny``: a signed decision on one parked call."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from .._updates import send_update
from .._wire import (
    DECIDE,
    PREVIEW_EDITS,
    EditsPreview,
    decided_by,
)
from ..approvals import call_digest, decision_for, load_private_key, send_decision
from ..codec import CodecError
from ..errors import ConfigurationError
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    _asks_in_history,
    _connect,
    _emit_json,
    _pending_of,
    _rpc_problem,
    _run,
)

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


async def _find_ask(client: Any, handle: Any, args: argparse.Namespace) -> Any:
    """The ask to decide. By signal it is read from the run's history, which needs no worker
    (the ``duraguard.ask`` step recorded it, run id and challenge included); by update, from
    the ``duraguard.pending`` query, since an update needs a worker anyway."""
    if args.signal:
        try:
            asks = await _asks_in_history(client, handle)
        except CodecError as e:
            raise CliError(f"cannot decode {args.workflow}'s history: {e}", EXIT_FAILED) from None
        except Exception as e:
            raise _rpc_problem(e, args.workflow, client.namespace) from None
        where = "in its history"
    else:
        try:
            asks = await _pending_of(handle, args.timeout)
        except Exception as e:
            problem = _rpc_problem(e, args.workflow, client.namespace)
            if problem.code == EXIT_FAILED:
                problem = CliError(
                    f"{problem}; a decision sent with --signal needs no worker (it is checked "
                    "when one runs)",
                    EXIT_FAILED,
                )
            raise problem from None
        where = "now"
    ask = next((a for a in asks if a.call_id == args.call), None)
    if ask is None:
        waiting = ", ".join(a.call_id for a in asks) or "none"
        raise CliError(
            f"call {args.call!r} is not waiting on {args.workflow} {where} (waiting: {waiting})"
        )
    return ask


async def _decide(args: argparse.Namespace, kind: str) -> int:
    key = load_key(args.key)
    edits = parse_edits(getattr(args, "edit", None) or ()) or None
    if args.ttl <= 0:
        raise CliError(f"--ttl must be a positive number of seconds; got {args.ttl}")
    client = await _connect(args)
    handle = client.get_workflow_handle(args.workflow)
    ask = await _find_ask(client, handle, args)
    if ask.run_id:  # the run that asked: a decision sent again never reaches another
        handle = client.get_workflow_handle(args.workflow, run_id=ask.run_id)
    if ask.call_digest != call_digest(ask.tool, ask.args):
        print(
            "duraguard: warning: the parked call's digest does not match its tool and "
            "arguments; the workflow will likely refuse this decision",
            file=sys.stderr,
        )
    if edits is not None and kind == "approve":
        refused = await _preview(handle, ask, edits, args, client.namespace)
        if refused is not None:
            return refused
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


async def _preview(
    handle: Any, ask: Any, edits: dict[str, Any], args: argparse.Namespace, namespace: str
) -> int | None:
    """Ask the run's guardrails about the edited call before anything is signed: a refused
    edit is reported (exit 1) and nothing is sent; ``None`` when the edits pass."""
    from temporalio.client import (
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    )

    what = f"the edits to {ask.call_id} on {args.workflow}"
    try:
        preview = await send_update(
            handle,
            PREVIEW_EDITS,
            {"call_id": ask.call_id, "edits": edits},
            result_type=EditsPreview,
            rpc_timeout=timedelta(seconds=args.timeout),
        )
    except WorkflowUpdateFailedError as e:
        why = str(getattr(e.cause, "message", None) or e.cause or e)
        raise CliError(
            f"{what} could not be previewed: {why}; nothing was sent", EXIT_FAILED
        ) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        raise CliError(
            f"{what} are checked by the run's guardrails before you sign, and no worker answered "
            f"within {args.timeout:g}s; nothing was sent. Retry when a worker runs, or decide "
            "without --edit",
            EXIT_FAILED,
        ) from None
    except Exception as e:
        raise _rpc_problem(e, args.workflow, namespace) from None
    if preview.ok:
        return None
    by = decided_by(preview.by, preview.check)
    if args.json:
        _emit_json(
            {
                "sent": None,
                "accepted": False,
                "edits_refused": True,
                "by": preview.by,
                "check": preview.check,
                "action": preview.action,
                "reason": preview.reason,
                "edits": edits,
            }
        )
    else:
        print(
            f"{what} were refused by {by} ({preview.action}): {preview.reason or 'no reason given'}"
        )
        print("nothing was sent; the call still waits for a decision")
    return EXIT_FAILED


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
            f"as {decision.approver}; the workflow checks it in a recorded step as soon as a "
            "worker runs it "
            f"(see `duraguard audit {decision.workflow_id}`)"
        )
    return EXIT_OK


async def _send_update(handle: Any, decision: Any, args: argparse.Namespace, namespace: str) -> int:
    from temporalio.client import (
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    )

    accepted, why = False, ""
    try:
        check = await send_decision(handle, decision, rpc_timeout=timedelta(seconds=args.timeout))
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
