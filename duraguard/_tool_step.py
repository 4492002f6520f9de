"""The tool step: duraguard's activity for one tool, named after it.

It runs the tool with the call's idempotency key, judges the arguments first under check mode
``inline`` (the tool runs only on a verdict that lets it), makes the result recordable (or fails
once, never running the tool again), judges it inside the same step, and returns only what may
be recorded. What an inline check was sent before comes back from the worker's
:class:`~duraguard._byref.Seen` (sent once, then by reference).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic_core import to_jsonable_python
from temporalio import activity
from temporalio.exceptions import ApplicationError

from ._bounds import too_deep, valid_texts
from ._byref import SeenEntries as SeenEntries
from ._byref import SeenSpecs as SeenSpecs
from ._conversation_store import ConversationStore
from ._findings import DETECTIONS_KEPT as DETECTIONS_KEPT
from ._findings import fewer_findings as fewer_findings
from ._kept_results import KEPT_FROM
from ._outside_keys import outside_if_long
from ._rest_flags import rest_read
from ._result_keys import ResultKeys, result_keys
from ._types import (
    NotJSON,
    PassResult,
    canonical_json,
    one_call,
)
from ._wire import ToolInvocation, ToolOutput
from ._workings import day_of
from .errors import BadToolArguments, ConfigurationError, ResultNotRecorded
from .tools import _KEY, Tool

log = logging.getLogger(__name__)


class InlineJudge(Protocol):
    """What a tool's step asks of the worker's checks (:class:`duraguard._checker.Checker`):
    the guardrails an invocation names by reference, its arguments judged, its result judged."""

    def with_guardrails(self, invocation: ToolInvocation) -> ToolInvocation | None: ...
    async def check_inline(self, invocation: ToolInvocation) -> tuple[PassResult, ...] | None: ...
    async def judge_result(
        self, invocation: ToolInvocation, tool: Tool, value: Any
    ) -> PassResult: ...


MAX_RESULT_BYTES = 1_048_576
"""The largest tool result a step records (canonical JSON); a larger one fails the call, not
retried: the tool ran, and running it again would repeat its effect."""


def _plain(result: Any) -> Any:
    try:
        return to_jsonable_python(result)
    except UnicodeEncodeError:
        # An object key with half a UTF-16 pair: its texts made valid first (U+FFFD).
        return to_jsonable_python(valid_texts(result))


def _recordable(tool: Tool, result: Any) -> tuple[Any, bytes]:
    """The result as JSON, and its canonical JSON (UTF-8), checked inside the tool's own step: a
    result that cannot be recorded fails the call once, never retried (the tool's effect
    happened; a retry would repeat it)."""
    deep = too_deep(result, f"tool {tool.name!r} ran, but its result")
    try:
        value = None if deep else _plain(result)
        deep = deep or too_deep(value, f"tool {tool.name!r} ran, but its result")
        text = "" if deep else canonical_json(value)
        try:
            written = text.encode()
        except UnicodeEncodeError:
            value = valid_texts(value)  # half a UTF-16 pair: kept as U+FFFD, not lost
            written = canonical_json(value).encode()
    except (NotJSON, ValueError, TypeError, RecursionError) as err:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result cannot be recorded as JSON ({err}); its "
            "effect happened and it is not run again. Return plain data (dicts, lists, str, "
            "numbers) or a pydantic model",
        ) from None
    if deep is not None:
        raise ResultNotRecorded(f"{deep}; its effect happened and it is not run again")
    if len(written) > MAX_RESULT_BYTES:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result is {len(written):,} bytes, over the "
            f"{MAX_RESULT_BYTES:,} a step records; its effect happened and it is not run again. "
            "Return less (a reference to the data, a page of it)",
        )
    return value, written


KEEP_TIMEOUT = 2.0
"""Seconds a tool step waits for the conversation store to keep its result (:func:`_kept`)."""

MAX_OUTPUT_BYTES = MAX_RESULT_BYTES + 512 * 1024
"""The most a tool's step returns: its result (or the replacement) and the verdicts on it."""


def _bounded(tool: Tool, out: ToolOutput, size: int) -> ToolOutput:
    """``out`` within :data:`MAX_OUTPUT_BYTES`: a step whose output the SDK refused to upload
    would be retried, and the tool with it (its effect repeated)."""
    judged = out.judged
    if judged is None or (
        size < 64 * 1024 and all(len(v.detections) <= DETECTIONS_KEPT for v in judged.verdicts)
    ):
        return out  # small: measuring it would cost more than it could save
    if len(out.model_dump_json()) <= MAX_OUTPUT_BYTES:
        return out
    noted = out.noted
    if noted is not None and (noted.hashes, noted.outside, noted.rows) != (None, None, None):
        # The result's keys go first: without them the workflow reads the result itself (the
        # flags of its unread rest, a few bytes, stay).
        gone = {"hashes": None, "numbers": None, "outside": None, "rows": None}
        kept = noted.model_copy(update=gone)
        out = out.model_copy(update={"noted": kept if kept.rest is not None else None})
        if len(out.model_dump_json()) <= MAX_OUTPUT_BYTES:
            return out
    out = out.model_copy(update={"judged": fewer_findings(judged)})
    total = len(out.model_dump_json())
    if total > MAX_OUTPUT_BYTES:
        raise ResultNotRecorded(
            f"tool {tool.name!r} ran, but its result with its checks' findings is {total:,} "
            f"bytes, over the {MAX_OUTPUT_BYTES:,} a step returns; its effect happened and it is "
            "not run again. Return less (a reference to the data, a page of it)",
        )
    return out


KEYS_IN_A_THREAD = 16 * 1024
"""A result this large (canonical JSON bytes) has its keys worked out in a thread: reading 60 KB
of text takes about 30 ms, which would hold up every other step of the worker waiting on its
event loop (in a thread the interpreter switches away from it every few milliseconds)."""


async def _noted(
    tool: Tool,
    value: Any,
    invocation: ToolInvocation,
    args: Any,
    size: int,
    written: bytes | None = None,
) -> ResultKeys | None:
    """The keys the workflow notes ``value`` (what the model will read) under, worked out here,
    outside workflow code (:mod:`duraguard._result_keys`), and the flags of its unread rest
    where :attr:`ToolInvocation.rest` asks; for a labelled tool's result (outside content, its
    keys read in the workflow) only those flags; ``None`` where there are none to send or they
    cannot be worked out (the workflow then reads the result itself: the tool ran, and its
    result goes back whatever this makes of it). ``written``: ``value``'s canonical JSON where
    the step has it already (its digest is part of what binds the keys)."""
    day = day_of(time.time())
    work: Callable[[], ResultKeys | None]
    if tool.labels:
        work = functools.partial(_outside_only, value, args, day, size, written)
    else:
        rest = invocation.rest
        work = functools.partial(result_keys, value, args, tool.name, day, written, rest=rest)
    try:
        if size >= KEYS_IN_A_THREAD:
            return await asyncio.to_thread(work)
        return work()
    except Exception as err:
        log.warning(
            "duraguard: the keys of tool %r's result were not worked out in its step "
            "(%s: %s); the workflow reads them itself",
            tool.name,
            type(err).__name__,
            err,
        )
        return None


def _outside_only(
    value: Any, args: Any, day: str, size: int, written: bytes | None
) -> ResultKeys | None:
    """A labelled tool's result (outside content): no trusted keys; the flags of its unread
    rest, and where it is large, its notes as outside content (:mod:`duraguard._outside_keys`)."""
    rest = rest_read(value, written)
    outside = outside_if_long(value, args, day, rest, size, written)
    if rest is None and outside is None:
        return None
    return ResultKeys(basis="", rest=rest, outside=outside)


async def _kept(
    store: ConversationStore | None,
    invocation: ToolInvocation,
    attempt: int,
    written: bytes,
    replacement: tuple[Any] | None = None,
) -> bool:
    """Whether the result the model will read (``written``, the canonical JSON of the tool's
    result, or a guardrail's ``replacement``) is now kept in the conversation store for the
    model step that follows (:mod:`duraguard._kept_results`). A store that cannot keep it
    (unreachable) fails nothing: the tool ran, and the workflow sends the result in full."""
    if store is None or not invocation.keep:
        return False
    try:
        text = canonical_json(replacement[0]) if replacement else written.decode()
    except (NotJSON, ValueError, TypeError, RecursionError):
        return False  # a replacement the workflow reads as it can: sent in full
    if len(text) < KEPT_FROM:
        return False
    try:
        info = activity.info()
        kept = store.keep_result(info.workflow_run_id or "", invocation.call_id, attempt, text)
        # After the tool's effect: a store that stalls must not hold the step past its timeout
        # (the tool would run again); a result not kept in time costs a resend, nothing else.
        await asyncio.wait_for(kept, KEEP_TIMEOUT)
    except Exception as err:
        log.warning(
            "duraguard: tool %r's result was not kept in the conversation store (%s: %s); the "
            "model step is sent it in full",
            invocation.call_id,
            type(err).__name__,
            err,
        )
        return False
    return True


def tool_activity(
    tool: Tool, runtime: InlineJudge | None = None, store: ConversationStore | None = None
) -> Callable[..., Any]:
    """The activity that runs ``tool``: named after it, one input model, sync tools in a thread,
    its result made recordable and judged (``result_guardrails``) before it leaves the step;
    with ``store``, kept there for the model step where the invocation asks."""
    is_async = inspect.iscoroutinefunction(tool.fn)
    signature = inspect.signature(tool.fn)
    params = signature.parameters
    takes_context = "duraguard_context" in params

    @activity.defn(name=tool.name)
    async def run(invocation: ToolInvocation) -> ToolOutput:
        info = activity.info()
        invocation = invocation.completed(
            info.workflow_id or "", info.workflow_run_id or "", info.workflow_type or ""
        )
        args = invocation.args
        checked: tuple[PassResult, ...] = ()
        if invocation.check is not None:
            if runtime is None:
                # Nothing here can judge the arguments: the tool does not run, and the workflow
                # judges them in a pass of its own.
                return ToolOutput(ran=False)
            resolved = runtime.with_guardrails(invocation)
            judged_args = None if resolved is None else await runtime.check_inline(resolved)
            if resolved is None or judged_args is None:
                return ToolOutput(ran=False, missing=True)
            invocation = resolved
            checked = judged_args
            decided = one_call(checked)
            if decided.tripped:
                return ToolOutput(ran=False, checked=checked)
            args = decided.use(args)
        kwargs = _kwargs(tool, signature, args, invocation.context if takes_context else None)
        token = _KEY.set(invocation.idempotency_key)
        try:
            result = await _invoke(tool, kwargs, is_async=is_async, attempt=info.attempt)
        finally:
            _KEY.reset(token)
        value, written = _recordable(tool, result)
        size = len(written)
        if not invocation.result_specs or runtime is None:
            asked = invocation.result_keys
            noted = await _noted(tool, value, invocation, args, size, written) if asked else None
            kept = await _kept(store, invocation, info.attempt, written)
            return ToolOutput(
                result=value, labels=tool.labels, checked=checked, noted=noted, kept=kept
            )
        judged = await runtime.judge_result(invocation, tool, value)
        # A replacement travels once (in ``judged``); a refused result not at all.
        shown = None if judged.tripped or judged.replaced else value
        keyed = invocation.result_keys and not judged.tripped
        # The replacement as the workflow will read it (a guardrail may give a date, a set).
        read = to_jsonable_python(judged.use(value)) if judged.replaced else value
        noted = await _noted(tool, read, invocation, args, size) if keyed else None
        replacement = (read,) if judged.replaced else None
        kept = not judged.tripped and await _kept(
            store, invocation, info.attempt, written, replacement
        )
        out = ToolOutput(
            result=shown, labels=tool.labels, judged=judged, checked=checked, noted=noted, kept=kept
        )
        return _bounded(tool, out, size)

    return run


def _kwargs(
    tool: Tool, signature: inspect.Signature, args: Any, context: Any | None
) -> dict[str, Any]:
    """The tool's keyword arguments (its context where it takes one), or why it cannot take
    them (not retried: the same arguments fail the same way)."""
    if not isinstance(args, dict):
        raise BadToolArguments(
            f"tool {tool.name!r} takes an object of arguments; got {type(args).__name__}",
        )
    kwargs = dict(args)
    if context is not None:
        kwargs["duraguard_context"] = context
    try:
        signature.bind(**kwargs)
    except TypeError as err:
        raise BadToolArguments(f"tool {tool.name!r} cannot take these arguments: {err}") from None
    return kwargs


async def _invoke(tool: Tool, kwargs: dict[str, Any], *, is_async: bool, attempt: int) -> Any:
    """Run the tool (a sync one in a thread); past its own attempt budget, its error is final."""
    try:
        if is_async:
            return await tool.fn(**kwargs)
        return await asyncio.to_thread(tool.fn, **kwargs)
    except ApplicationError:
        raise
    except Exception as err:
        # The tool's own attempt budget holds whatever retry policy the workflow asked for.
        if attempt >= tool.max_attempts:
            raise ApplicationError(
                f"{type(err).__name__}: {err} (after {tool.max_attempts} attempt(s))",
                type=type(err).__name__,
                non_retryable=True,
            ) from err
        raise


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    out: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise ConfigurationError(
                f"DuraguardPlugin(tools=[...]) takes tools declared with @duraguard.tool; got "
                f"{type(t).__name__}"
            )
        if t.name in out:
            raise ConfigurationError(f"two tools are named {t.name!r}; tool names must be unique")
        out[t.name] = t
    return out
