"""Two versions of one workflow that judge different arguments: replay must notice."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.guardrail import GuardrailSpec


@workflow.defn(name="Binding")
class BindingV1:
    @workflow.run
    async def run(self, mode: str) -> str:
        g = GuardrailSpec(kind="custom", name="counting", replaces=False)
        out = await duraguard.guarded_call(
            "refund",
            {"order_id": "A1", "amount": 20},
            guardrails=[duraguard.schema(), g],
            options=duraguard.CallOptions(mode=mode),
        )
        return str(out.ran)


@workflow.defn(name="Binding")
class BindingV2:
    @workflow.run
    async def run(self, mode: str) -> str:
        g = GuardrailSpec(kind="custom", name="counting", replaces=False)
        out = await duraguard.guarded_call(
            "refund",
            {"order_id": "A1", "amount": 900},
            guardrails=[duraguard.schema(), g],
            options=duraguard.CallOptions(mode=mode),
        )
        return str(out.ran)
