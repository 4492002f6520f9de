"""What the model step may write: a provider's response brought within the bounds of a step.

A provider's response is outside input, and the model step is the first to write it into
history. Before it is written, the step leaves out what the workflow could not read back or
should not judge (see :mod:`duraguard._bounds`): calls past :data:`MAX_CALLS_PER_TURN`, the
arguments of a call nested too deep or too large to carry, an answer too long for a step. What
it leaves out is said in the response (:attr:`ToolCall.refused`,
:attr:`ModelResponse.calls_dropped`, :attr:`ModelResponse.content_dropped`), and the loop tells
the model. Fields a provider sets there are overwritten.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ._bounds import MAX_ANSWER_BYTES, MAX_CALLS_PER_TURN, too_deep, valid_text, valid_texts
from ._types import Context, NotJSON, PassResult, Subject, canonical_json
from ._wire import CheckRequest, CheckResponse, ModelResponse, ToolCall
from .guardrail import GuardrailSpec

MAX_OUTPUT_BYTES = 1_572_864
"""The most a model step's output takes (JSON), 1.5 MiB of the 2 MiB a payload may be: the
largest calls' arguments are left out until it fits."""


def _refused(call: ToolCall, why: str) -> ToolCall:
    return call.model_copy(update={"arguments": {}, "refused": why})


def _size(call: ToolCall) -> int:
    return len(call.model_dump_json())


def _call(call: ToolCall) -> tuple[ToolCall, int]:
    """``call`` with its arguments left out where a step cannot carry them, its texts valid
    Unicode (:func:`valid_text`); and its size."""
    name, id_ = valid_text(call.name), valid_text(call.id)
    if (name, id_) != (call.name, call.id):
        call = call.model_copy(update={"name": name, "id": id_})
    why = too_deep(call.arguments, f"the arguments of {call.name!r}")
    if why is None:
        try:
            text = canonical_json(call.arguments)
        except (NotJSON, ValueError, RecursionError) as err:
            why = f"the arguments of {call.name!r} are not plain JSON: {err}"
        else:
            try:
                text.encode()  # the one look at every text: a lone surrogate fails it
            except UnicodeEncodeError:
                call = call.model_copy(update={"arguments": valid_texts(call.arguments)})
    if why is not None:
        call = _refused(call, why)
    elif call.refused:
        call = call.model_copy(update={"refused": ""})
    return call, _size(call)


def bounded(response: ModelResponse) -> ModelResponse:
    """``response`` within the bounds of a step (see the module docstring), every text in it
    valid Unicode."""
    if response.content is not None and (fixed := valid_text(response.content)) != response.content:
        response = response.model_copy(update={"content": fixed})
    if any(type(k) is str and valid_text(k) != k for k in response.usage):
        response = response.model_copy(update={"usage": {}})
    calls = list(response.tool_calls)
    update: dict[str, Any] = {"calls_dropped": 0, "content_dropped": 0}
    if len(calls) > MAX_CALLS_PER_TURN:
        update["calls_dropped"] = len(calls) - MAX_CALLS_PER_TURN
        del calls[MAX_CALLS_PER_TURN:]
    content = response.content
    said = len(content.encode()) if content else 0
    if said > MAX_ANSWER_BYTES:
        update["content"], update["content_dropped"], said = None, len(content or ""), 0
    sized = [_call(c) for c in calls]
    used = sum(s for _, s in sized) + said
    for i in sorted(range(len(sized)), key=lambda k: -sized[k][1]):
        if used <= MAX_OUTPUT_BYTES:
            break
        call, size = sized[i]
        why = (
            f"the arguments of {call.name!r} are {size:,} bytes; with the rest of the turn they "
            f"are over the {MAX_OUTPUT_BYTES:,} bytes a model step carries; send less"
        )
        smaller = _refused(call, why)
        sized[i] = (smaller, _size(smaller))
        used -= size - sized[i][1]
    update["tool_calls"] = tuple(c for c, _ in sized)
    return response.model_copy(update=update)


async def judged_calls(
    check: Callable[[CheckRequest], Awaitable[CheckResponse]],
    specs: tuple[GuardrailSpec, ...],
    context: Context,
    response: ModelResponse,
    turn: int,
) -> dict[str, Any]:
    """The model's calls judged with ``specs`` (the first guardrails of the loop's list, the
    last of them one that may mask) before the step's output is recorded: each call's
    arguments as the guardrails left them, and their verdicts (``called``)."""
    calls = list(response.tool_calls)
    at = [i for i, c in enumerate(calls) if not c.refused and isinstance(c.arguments, dict)]
    if not at:
        return {}
    subjects = tuple(
        Subject(
            placement="tool-args",
            value=calls[i].arguments,
            tool=calls[i].name,
            call_id=calls[i].id,
            context=context,
        )
        for i in at
    )
    asked = CheckRequest(guardrails=specs, subjects=subjects, purpose="tool-args", turn=turn)
    results = (await check(asked)).results
    called: list[PassResult | None] = [None] * len(calls)
    for i, r in zip(at, results, strict=True):
        if r.replaced:
            deep = too_deep(
                r.value, f"the arguments of {calls[i].name!r} as {r.verdict.by} left them"
            )
            if deep is not None or not isinstance(r.value, dict):
                calls[i] = _refused(
                    calls[i], deep or "a guardrail replaced its arguments with no object"
                )
                continue
            calls[i] = calls[i].model_copy(update={"arguments": r.value})
            r = r.model_copy(update={"value": None})  # the call's arguments are the value
        # What an audit reads of a pass: its deciding verdict and what was observed (a plain
        # allow of each guardrail would repeat, call after call, what the decided allow says).
        # Nor the call it is about: the verdicts are the calls' own, in order (the workflow
        # names each after its call, and checks its digest against the arguments recorded).
        kept = tuple(v for v in r.verdicts if v.action != "allow" or v.outcome != "complete")
        update = {"verdicts": kept, "placement": None, "tool": None, "call_id": None}
        called[i] = r.model_copy(update=update)
    return {"tool_calls": tuple(calls), "called": tuple(called)}


__all__ = ["MAX_ANSWER_BYTES", "MAX_OUTPUT_BYTES", "bounded", "judged_calls"]
