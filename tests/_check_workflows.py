"""Workflows exercising check() and guarded_call() directly."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard._wire import ToolInvocation, ToolOutput


@workflow.defn(name="CheckValue")
class CheckValue:
    @workflow.run
    async def run(self, text: str) -> dict[str, Any]:
        r = await duraguard.check("scan", guardrails=[duraguard.pii(rules=["email"])], input=text)
        return {"tripped": r.tripped, "value": r.value, "action": r.verdict.action}


@workflow.defn(name="CheckParallel")
class CheckParallel:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        async def slow_call() -> Any:
            return await workflow.execute_activity(
                "slow_send",
                ToolInvocation(call_id="p1", args={"to": "a@example.com", "body": "x"}),
                start_to_close_timeout=timedelta(seconds=30),
                heartbeat_timeout=timedelta(seconds=2),
                result_type=ToolOutput,
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )

        r = await duraguard.check(
            "moderate",
            guardrails=[duraguard.moderation(classifier="toy", action=args.get("action", "halt"))],
            input=args["question"],
            call=slow_call,
            parallel=True,
            output=lambda out: out.result,
        )
        return {
            "tripped": r.tripped,
            "cancelled": r.cancelled,
            "ran": r.result is not None,
            "action": r.verdict.action,
        }


@workflow.defn(name="CheckHalt")
class CheckHalt:
    @workflow.run
    async def run(self, text: str) -> str:
        await duraguard.check(
            "moderate", guardrails=[duraguard.moderation(classifier="toy")], input=text
        )
        return "not halted"


@workflow.defn(name="GuardedHalt")
class GuardedHalt:
    @workflow.run
    async def run(self) -> str:
        await duraguard.guarded_call(
            "send_email",
            {"to": "a@example.com", "body": "attack"},
            guardrails=[duraguard.moderation(classifier="toy")],
        )
        return "not halted"


@workflow.defn(name="GuardedBadArgs")
class GuardedBadArgs:
    @workflow.run
    async def run(self) -> str:
        await duraguard.guarded_call("lookup", ["A1"], guardrails=[duraguard.schema()])  # type: ignore[arg-type]
        return "accepted"
