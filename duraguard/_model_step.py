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

from typing import Any

from ._bounds import MAX_CALLS_PER_TURN, too_deep
from ._types import NotJSON, canonical_json
from ._wire import ModelResponse, ToolCall

MAX_ANSWER_BYTES = 1_048_576
"""The longest answer (UTF-8 bytes) a model step carries; a longer one is left out."""
MAX_OUTPUT_BYTES = 1_572_864
"""The most a model step's output takes (JSON), 1.5 MiB of the 2 MiB a payload may be: the
largest calls' arguments are left out until it fits."""


def _refused(call: ToolCall, why: str) -> ToolCall:
    return call.model_copy(update={"arguments": {}, "refused": why})


def _size(call: ToolCall) -> int:
    return len(call.model_dump_json())


def _call(call: ToolCall) -> tuple[ToolCall, int]:
    """``call`` with its arguments left out where a step cannot carry them; and its size."""
    why = too_deep(call.arguments, f"the arguments of {call.name!r}")
    if why is None:
        try:
            canonical_json(call.arguments)
        except (NotJSON, ValueError, RecursionError) as err:
            why = f"the arguments of {call.name!r} are not plain JSON: {err}"
    if why is not None:
        call = _refused(call, why)
    elif call.refused:
        call = call.model_copy(update={"refused": ""})
    return call, _size(call)


def bounded(response: ModelResponse) -> ModelResponse:
    """``response`` within the bounds of a step (see the module docstring)."""
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


__all__ = ["MAX_ANSWER_BYTES", "MAX_OUTPUT_BYTES", "bounded"]
