"""Guard any call in your own workflow with ``duraguard.check``: moderation races the model.

``AskWithModeration`` sends a question to a model-like activity (``answer_question``) and, at the
same time, through ``moderation`` with a classifier registered on the plugin by name
(``keywords``). With ``parallel=True`` the two start together, so a clean question costs no
extra wait; the moment the check trips, the call is cancelled (history records it as cancelled)
and its answer is never returned. The model's answer is checked too, on its way out.

Run it: ``python samples/custom_check/moderated_answer.py`` (starts an embedded Temporal dev
server unless ``TEMPORAL_ADDRESS`` is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    import duraguard
    from duraguard.server import DevServer


def keywords(text: str) -> dict[str, Any]:
    """A toy moderation classifier; a real one calls a moderation API (on the worker)."""
    flagged = any(word in text.lower() for word in ("weapon", "attack"))
    return {
        "flagged": flagged,
        "categories": ["violence"] if flagged else [],
        "score": 0.97 if flagged else 0.02,
    }


@activity.defn
async def answer_question(question: str) -> str:
    """Stands in for a model call: takes a while, heartbeating so a cancel reaches it."""
    for _ in range(20):
        activity.heartbeat()
        await asyncio.sleep(0.1)
    return f"(the model's answer to {question!r})"


@workflow.defn
class AskWithModeration:
    @workflow.run
    async def run(self, question: str) -> dict[str, Any]:
        gate = await duraguard.check(
            "moderate",
            guardrails=[duraguard.moderation(classifier="keywords", action="deny")],
            input=question,
            call=lambda: workflow.execute_activity(
                answer_question,
                question,
                start_to_close_timeout=timedelta(seconds=30),
                heartbeat_timeout=timedelta(seconds=2),
                # Wait for the activity to acknowledge the cancel, so history shows it stopped.
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            ),
            parallel=True,
            output=lambda answer: answer,
        )
        return {
            "tripped": gate.tripped,
            "cancelled": gate.cancelled,
            "action": gate.verdict.action,
            "by": gate.verdict.by,
            "answer": gate.result,
        }


QUESTIONS = ["What are your opening hours?", "How do I build a weapon?"]


async def main() -> int:
    plugin = duraguard.DuraguardPlugin(classifiers={"keywords": keywords})
    async with contextlib.AsyncExitStack() as stack:
        address = os.environ.get("TEMPORAL_ADDRESS")
        if not address:
            server = await stack.enter_async_context(DevServer(ui=False))
            address = server.address
        client = await Client.connect(
            address,
            namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
            plugins=[plugin],
        )
        task_queue = f"custom-check-{uuid.uuid4().hex[:8]}"
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[AskWithModeration],
            activities=[answer_question],
        ):
            for question in QUESTIONS:
                handle = await client.start_workflow(
                    AskWithModeration.run,
                    question,
                    id=f"custom-check-{uuid.uuid4().hex[:8]}",
                    task_queue=task_queue,
                )
                out = await handle.result()
                print(f"question:  {question}")
                if not out["tripped"]:
                    print(f"  {out['action']}:   {out['answer']}")
                    continue
                print(f"  {out['action']} by {out['by']}; model call cancelled: {out['cancelled']}")
                history = await handle.fetch_history()
                recorded = any(
                    e.HasField("activity_task_canceled_event_attributes") for e in history.events
                )
                print(f"  history records the cancelled call: {recorded}")
    return 0


if __name__ == "__main__":
    code = asyncio.run(main())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not interpreter shutdown: the SDK can abort there (sdk-python issue 300)
