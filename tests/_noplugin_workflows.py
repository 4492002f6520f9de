"""A workflow for a worker built without DuraguardPlugin whose module imports duraguard as most
code does, so that worker's sandbox imports duraguard again (tests/_passed_workflows.py passes
it through instead)."""

from __future__ import annotations

from temporalio import workflow

import duraguard  # not passed through: a worker without the plugin imports it in its sandbox


@workflow.defn(name="noplugin.Plain")
class Plain:
    @workflow.run
    async def run(self) -> bool:
        o = await duraguard.guarded_call("lookup", {"order_id": "A1"})
        return o.ran


if __name__ == "__main__":
    raise SystemExit("test workflows; run them with pytest")
