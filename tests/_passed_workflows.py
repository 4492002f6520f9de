"""A workflow whose module passes duraguard through the sandbox itself (no plugin needed for
that): a worker built without DuraguardPlugin runs it until a call first needs the rest."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import duraguard


@workflow.defn(name="noplugin.PassedThrough")
class PassedThrough:
    @workflow.run
    async def run(self) -> dict[str, Any]:
        o = await duraguard.guarded_call("lookup", {"order_id": "A1"})
        return {"ran": o.ran}


if __name__ == "__main__":
    raise SystemExit("test workflows; run them with pytest")
