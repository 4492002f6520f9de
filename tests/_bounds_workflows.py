"""Workflows that hand duraguard values nested deeper than a step carries, built in workflow
code (an input that deep could not be read back by the workflow itself)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.guardrail import GuardrailSpec


def nested(depth: int, shape: str) -> Any:
    """A value nested ``depth`` levels deep: lists, dicts, or both in turn (``mixed``)."""
    value: Any = "ana@example.com"
    for i in range(depth):
        if shape == "lists" or (shape == "mixed" and i % 2):
            value = [value]
        else:
            value = {"k": value}
    return value


class Deep(BaseModel):
    depth: int
    shape: str = "dicts"
    guardrails: list[GuardrailSpec] = []


@workflow.defn(name="bounds.DeepCall")
class DeepCall:
    """A guarded call whose arguments carry a deep value, then a plain one."""

    @workflow.run
    async def run(self, spec: Deep) -> list[dict[str, Any]]:
        out = []
        for args in ({"order_id": nested(spec.depth, spec.shape)}, {"order_id": "A1"}):
            o = await duraguard.guarded_call("lookup", args, guardrails=spec.guardrails)
            out.append({"ran": o.ran, "check": o.verdict.check, "reason": o.verdict.reason})
        return out


@workflow.defn(name="bounds.DeepAnswer")
class DeepAnswer:
    """check() over a structured final answer that is nested deep."""

    @workflow.run
    async def run(self, spec: Deep) -> dict[str, Any]:
        r = await duraguard.check(
            "answer",
            guardrails=spec.guardrails,
            input={
                "placement": "final-answer",
                "value": {"answer": nested(spec.depth, spec.shape)},
            },
        )
        return {"tripped": r.tripped, "check": r.verdict.check, "reason": r.verdict.reason}


if __name__ == "__main__":
    raise SystemExit("test workflows; run them with pytest")
