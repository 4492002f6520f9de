"""A call that waits for a person: refunds over 100 need a manager's signed yes.

``ManagerForBigRefunds`` is a guardrail of our own (a :class:`duraguard.Guardrail` subclass): it
answers ``approve`` with the role ``manager`` for a refund over 100, which parks the call,
durably, until a person decides. The manager here is ``alice``: her Ed25519 key pair is made in a
temporary directory, and the worker trusts her public key with the role ``manager``.

The sample starts the agent, finds the parked call with the workflow's ``duraguard.pending``
query, signs a yes bound to that exact call with alice's private key, and sends it by the
``duraguard.decide`` update, which answers at once with the recorded check of her decision. The
refund then runs and the agent finishes. A person does the same from a shell with
``duraguard approve WORKFLOW CALL --key alice.pem``; the sample prints that command too.

Run it: ``python samples/approval/manager_approval.py`` (starts an embedded Temporal dev server
unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import uuid
from pathlib import Path

from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard import ApproverKeys, PendingAsk, Subject, Verdict
    from duraguard.approvals import decision_for, generate_keypair, send_decision
    from duraguard.models import ScriptedModels, answer, calls
    from duraguard.server import DevServer
    from duraguard.types import PENDING_QUERY


class ManagerForBigRefunds(duraguard.Guardrail):
    """Refunds over 100 wait for a manager's yes; everything else passes."""

    name = "manager-for-big-refunds"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        if subject.tool == "refund_card" and float(subject.value.get("amount", 0)) > 100:
            return Verdict.approve("refunds over 100 need a manager", role="manager")
        return Verdict.allow()


MANAGER = ManagerForBigRefunds()


@duraguard.tool(kind="write")
def refund_card(order_id: str, amount: float) -> dict[str, object]:
    """Refund an order to the card it was paid with."""
    return {"order_id": order_id, "refunded": amount}


@workflow.defn
class RefundAgent:
    @workflow.run
    async def run(self, request: str) -> duraguard.AgentResult:
        return await duraguard.agent_loop(
            "refunds",
            prompt=request,
            model="scripted:refund",
            tools=["refund_card"],
            guardrails=[duraguard.schema(), MANAGER],
        )


MODELS = ScriptedModels(
    {
        "refund": [
            calls(("refund_card", {"order_id": "A-7", "amount": 250.0})),
            answer("Refunded 250.00 for order A-7."),
        ]
    }
)


async def parked_call(handle: WorkflowHandle[RefundAgent, duraguard.AgentResult]) -> PendingAsk:
    """The first call waiting for a person, from the workflow's pending query."""
    for _ in range(300):
        pending = await handle.query(PENDING_QUERY, result_type=list[PendingAsk])
        if pending:
            return pending[0]
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no call of {handle.id} was waiting for a person after 30 s")


async def main() -> int:
    async with contextlib.AsyncExitStack() as stack:
        # alice's key pair, as `duraguard keygen alice --roles manager` makes it: the private
        # key stays with her; the worker trusts the public key, with her role.
        keydir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duraguard-")))
        private_pem, public_pem = generate_keypair()
        key_file = keydir / "alice.pem"
        key_file.write_bytes(private_pem)
        key_file.chmod(0o600)
        approvers = ApproverKeys.from_mapping(
            {"alice": {"public_key": public_pem.decode(), "roles": ["manager"]}}
        )
        plugin = duraguard.DuraguardPlugin(
            tools=[refund_card],
            models={"scripted": MODELS},
            guardrails=[MANAGER],
            approvers=approvers,
        )
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            server = await stack.enter_async_context(DevServer(ui=False))
            address = server.address
        client = await Client.connect(
            address,
            namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            plugins=[plugin],
        )
        task_queue = f"approval-{uuid.uuid4().hex[:8]}"
        async with Worker(client, task_queue=task_queue, workflows=[RefundAgent]):
            handle = await client.start_workflow(
                RefundAgent.run,
                "Refund order A-7 in full (250.00).",
                id=f"refund-{uuid.uuid4().hex[:8]}",
                task_queue=task_queue,
            )
            ask = await parked_call(handle)
            print(f"parked:   {ask.call_id} {ask.tool} {ask.args}, asks role {ask.role}")
            print(f"          why: {ask.reason}")
            print("from a shell, the same yes is:")
            print(
                f"  TEMPORAL_ADDRESS={address} duraguard approve "
                f"{ask.workflow_id} {ask.call_id} --key {key_file}"
            )

            # What `duraguard approve` does: sign a yes bound to this exact ask of this run (its
            # workflow, run, call, arguments and challenge), send it by update (sent again where
            # the server aborts it).
            decision = decision_for(ask, approver="alice", private_key=key_file)
            check = await send_decision(client, decision)
            print(f"answer:   ok={check.ok} approver={check.approver} roles={list(check.roles)}")
            result = await handle.result()

        print(f"stop reason: {result.stop_reason}")
        print(f"answer:      {result.answer}")
        for v in result.verdicts:
            who = f", approved by {v.approver}" if v.approver else ""
            print(f"verdict:     {v.action:7} {v.call_id} {v.tool} by {v.by}{who}")
        return 0 if check.ok and result.stop_reason == "done" else 1


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
