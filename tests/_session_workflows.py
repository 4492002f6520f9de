"""A workflow that makes guarded calls and continues-as-new, carrying its session over."""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.checks import policy


class Batch(BaseModel):
    calls_per_run: int
    runs_left: int
    sealed: duraguard.SealedSession | None = None
    tamper: str | None = None
    """``mac`` or ``entry``: alter the sealed session before handing it on (for tests)."""
    done: list[str] = []


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
