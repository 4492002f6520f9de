"""A model's answer in ``agent_loop``: its text judged before anything is done with it, then
judged as the final answer, where validation guardrails may send it back as a correction
(bounded); an answer too long to carry is asked for again, shorter."""

from __future__ import annotations

from typing import Any

from ._ask import judge
from ._bounds import MAX_ANSWER_BYTES
from ._pass import recorded_pass
from ._run import Run
from ._types import PassResult
from ._wire import AgentResult

WITHHELD: Any = object()
"""An answer a pass refused: the model is asked again, nothing goes on."""


def too_long(run: Run, length: int) -> None:
    """An answer the model step could not carry (:data:`MAX_ANSWER_BYTES`): the model is told
    to answer in less (the turn counts)."""
    run.say("assistant", "[withheld: too long to carry]")
    run.say(
        "user",
        f"Your answer was {length:,} characters, over the {MAX_ANSWER_BYTES:,} bytes one step "
        "carries. Answer again, in fewer words.",
    )


async def answer_and_final(run: Run, content: str) -> tuple[PassResult, PassResult]:
    """Where calls are judged in their tool steps: a final answer judged as the model's text
    and as the final answer in one step. The second verdict is used only where the first let the text through as it
    was; otherwise the final answer is judged again, as it then reads (the audit shows both)."""
    subjects = [
        run.subject("post-model", content),
        run.subject("final-answer", content, session=run.s.answer_view()),
    ]
    said, final = await recorded_pass(
        run.s, run.specs, subjects, purpose="answer", mode=run.opts.mode
    )
    return said, final


async def answer_text(
    run: Run, content: str | None, said: PassResult | None = None
) -> tuple[Any, AgentResult | None]:
    """The model's answer text, judged before anything is done with it (``said``: already
    judged, in the step that judged it as the final answer too)."""
    if not content:
        return content, None
    r, _ = await judge(
        run.s, run.specs, run.subject("post-model", content), purpose="post-model",
        approval_timeout=run.opts.approval_timeout, mode=run.opts.mode, judged=said,
    )  # fmt: skip
    if r.verdict.action == "halt":
        run.s.halt(r.verdict.by)
        run.say("assistant", None)
        return content, run.done("guardrail", note=r.verdict.reason)
    if r.tripped:
        run.say("assistant", "[withheld by guardrail]")
        run.say(
            "user",
            f"Your previous answer was refused: {r.verdict.reason}. Answer again without it.",
        )
        return WITHHELD, None
    used = r.use(content)
    return (used if isinstance(used, str) else content), None


async def final_answer(
    run: Run,
    content: str | None,
    corrections: int,
    max_corrections: int,
    judged: PassResult | None = None,
) -> tuple[AgentResult | None, int]:
    """A final answer: validation guardrails may send it back as a correction (``judged``:
    already judged, in the step that judged the model's text)."""
    if judged is None:
        subject = run.subject("final-answer", content, session=run.s.answer_view())
        (judged,) = await recorded_pass(
            run.s, run.specs, [subject], purpose="final-answer", mode=run.opts.mode
        )
    r = judged
    run.s.note_pass(r)
    v = r.verdict
    if v.action == "halt":
        run.s.halt(v.by)
        return run.done("guardrail", note=v.reason), corrections
    if r.tripped:
        run.say("assistant", content)
        if corrections >= max_corrections:
            why = f"every answer was refused by {v.by}: {v.reason}"
            return run.done("no-answer", note=why), corrections
        run.say(
            "user",
            f"Your answer was not accepted ({v.by}): {v.reason}. Correct it and answer again.",
        )
        return None, corrections + 1
    final = r.value if r.verdict.replaces else content
    run.say("assistant", final)
    return run.done("done", answer=final), corrections


__all__ = ["WITHHELD", "answer_and_final", "answer_text", "final_answer", "too_long"]
