"""Shared setup for the policy tests: a support desk's catalogue, approvers, and one-call runs."""

from __future__ import annotations

from typing import Any

from duraguard._types import Context, Grant, SessionView, Subject, Verdict
from duraguard.approvals import (
    ApprovalCheck,
    Approver,
    ApproverKeys,
    Decision,
    generate_keypair,
    load_public_key,
    verify,
)
from duraguard.checks.policy import PolicyRegistry, Session, policy
from duraguard.engine import run_pass
from duraguard.guardrail import Resources


def obj(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


STR = {"type": "string"}
NUM = {"type": "number"}

CATALOGUE: dict[str, Any] = {
    "tools": {
        "get_order": {"kind": "read", "input_schema": obj(["order_id"], order_id=STR)},
        "orders": {"description": "orders", "input_schema": obj(order_id=STR)},
        "refund_card": {
            "kind": "write",
            "input_schema": obj(["order_id", "amount"], order_id=STR, amount=NUM),
            "undo": {"tool": "cancel_refund", "mapping": {"refund_id": "result.refund_id"}},
        },
        "cancel_refund": {"kind": "write", "input_schema": obj(["refund_id"], refund_id=STR)},
        "fetch_page": {"kind": "read", "labels": ["web"], "input_schema": obj(["url"], url=STR)},
        "read_inbox": {"kind": "read", "labels": ["email"], "input_schema": obj()},
        "save_note": {"kind": "write", "input_schema": obj(["text"], order_id=STR, text=STR)},
        "send_email": {"kind": "send", "input_schema": obj(["to", "body"], to=STR, body=STR)},
        "post_message": {
            "kind": "send",
            "input_schema": obj(["channel", "text"], channel=STR, text=STR),
        },
        "old_refund": {"kind": "write", "input_schema": obj()},
        "pay": {
            "kind": "write",
            "payment_field": "amount",
            "payment_cap": 100,
            "input_schema": obj(["amount"], amount=NUM),
        },
        "wire_funds": {"kind": "write", "tier": 3, "input_schema": obj(["amount"], amount=NUM)},
    }
}

ALLOW_SMALL_REFUNDS = """
rules:
  - name: small refunds are fine
    tool: refund_card
    when:
      - arg: amount
        lte: 100
    then: allow
  - name: refunds over 100 need a manager
    tool: refund_card
    when:
      - arg: amount
        gt: 100
    then: ask
    role: manager
  - name: notes are fine
    tool: save_note
    when:
      - arg: text
        exists: true
    then: allow
"""


class People:
    """Two approvers with Ed25519 keys: alice (manager) and bob (agent)."""

    def __init__(self) -> None:
        self.private: dict[str, bytes] = {}
        approvers = []
        for name, roles in (("alice", {"manager"}), ("bob", {"agent"})):
            priv, pub = generate_keypair()
            self.private[name] = priv
            approvers.append(Approver(name, load_public_key(pub), frozenset(roles)))
        self.keys = ApproverKeys(approvers)


def registry(**kw: Any) -> PolicyRegistry:
    kw.setdefault("catalogue", CATALOGUE)
    return PolicyRegistry(**kw)


async def run(
    tool: str,
    args: Any,
    *,
    session: SessionView | Session | None = None,
    reg: PolicyRegistry | None = None,
    keys: ApproverKeys | None = None,
    agent: str | None = None,
    workflow_id: str = "wf-1",
    call_id: str = "call-9",
    tools: dict[str, Any] | None = None,
    grant: Grant | None = None,
    **settings: Any,
) -> Verdict:
    """The policy's verdict on one call."""
    if isinstance(session, Session):
        session = session.view(tool, args if isinstance(args, dict) else {})
    extra: dict[str, Any] = {"policy": reg or registry()}
    if keys is not None:
        extra["approvers"] = keys
    subject = Subject(
        placement="tool-args",
        tool=tool,
        value=args,
        call_id=call_id,
        context=Context(agent=agent, workflow_id=workflow_id),
        session=session,
        grant=grant,
    )
    result = await run_pass([policy(**settings)], subject, Resources(extra=extra, tools=tools))
    (verdict,) = result.verdicts  # the policy's own verdict, as it decided the pass
    return verdict


def said(*turns: str) -> Session:
    s = Session("wf-1")
    for t in turns:
        s.turn(t)
    return s


def confirm(
    decision: Decision,
    tool: str,
    args: dict[str, Any],
    keys: ApproverKeys,
    *,
    now: float,
    role: str | None = None,
    used_nonces: tuple[str, ...] = (),
) -> ApprovalCheck:
    """What the workflow's decision step does: the one verifier, for call-9 of wf-1."""
    return verify(
        decision,
        workflow_id="wf-1",
        call_id="call-9",
        tool=tool,
        args=args,
        keys=keys,
        now=now,
        role=role,
        used_nonces=used_nonces,
    )
