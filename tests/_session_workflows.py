"""A workflow that makes guarded calls and continues-as-new, carrying its session over."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow

from duraguard.types import SealedSession

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.checks import policy


class Batch(BaseModel):
    calls_per_run: int
    runs_left: int
    sealed: SealedSession | None = None
    tamper: str | None = None
    """``mac`` or ``entry``: alter the sealed session before handing it on (for tests)."""
    done: list[str] = []
    told: list[dict[str, str | None]] = []


@workflow.defn(name="CarryOver")
class CarryOver:
    @workflow.run
    async def run(self, batch: Batch) -> list[str]:
        await duraguard.resume(batch.sealed)
        done = list(batch.done)
        for i in range(batch.calls_per_run):
            out = await duraguard.guarded_call(
                "lookup",
                {"order_id": f"A{len(done) + i}"},
                guardrails=[policy(checks=["tool_kinds", "order"])],
            )
            done.append(f"{out.call_id}:{out.ran}" + ("" if out.ran else f":{out.result}"))
        if batch.runs_left <= 0:
            return done
        sealed = await duraguard.carry_over(keep=2)
        if batch.tamper == "mac":
            sealed = sealed.model_copy(update={"mac": "0" * 64})
        elif batch.tamper == "entry":
            ledger = sealed.snapshot.ledger.model_copy(deep=True)
            ledger.entries[0] = ledger.entries[0].model_copy(update={"tool": "refund"})
            sealed = sealed.model_copy(
                update={"snapshot": sealed.snapshot.model_copy(update={"ledger": ledger})}
            )
        workflow.continue_as_new(
            Batch(
                calls_per_run=batch.calls_per_run,
                runs_left=batch.runs_left - 1,
                sealed=sealed,
                done=done,
            )
        )


@duraguard.tool(kind="read")
def whoami(duraguard_context: Any) -> dict[str, str | None]:
    """What a tool is told of its call: its idempotency key and the run it is called from."""
    ctx = duraguard_context
    return {
        "key": duraguard.idempotency_key(),
        "workflow_id": ctx.workflow_id,
        "run_id": ctx.run_id,
        "workflow_type": ctx.workflow_type,
    }


@workflow.defn(name="WhoAmIAcrossRuns")
class WhoAmIAcrossRuns:
    """One ``whoami`` call per run, the session carried to the next run."""

    @workflow.run
    async def run(self, batch: Batch) -> list[dict[str, str | None]]:
        await duraguard.resume(batch.sealed)
        out = await duraguard.guarded_call("whoami", {})
        if batch.runs_left <= 0:
            return [*batch.told, out.result]
        sealed = await duraguard.carry_over()
        workflow.continue_as_new(
            batch.model_copy(
                update={
                    "runs_left": batch.runs_left - 1,
                    "sealed": sealed,
                    "told": [*batch.told, out.result],
                }
            )
        )


@workflow.defn(name="QueriedBeforeItsSession")
class QueriedBeforeItsSession:
    """Waits for ``go`` before any duraguard call; its ``peek`` query asks for the session."""

    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def start(self) -> None:
        self.go = True

    @workflow.query
    def peek(self) -> int:
        return duraguard.session().counts.calls

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self.go)
        out = await duraguard.guarded_call("lookup", {"order_id": "A1"})
        return f"{out.call_id}:{out.ran}"
