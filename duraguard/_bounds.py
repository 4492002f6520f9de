"""How deep and how many: the bounds on every value that crosses a step boundary, in one place.

A value duraguard writes into a step's input or output is read back by the other side with the
SDK's payload converter. Measured on temporalio 1.35 with pydantic-core 2.x (the pydantic
converter duraguard installs): it *writes* JSON nested up to 254 deep, but its reader (jiter)
refuses a document nested 201 deep or more. A model step that wrote tool arguments nested 210
deep therefore completed, and every workflow task after it failed reading its result, for ever.
The default converter reads and writes about 990 levels (Python's recursion limit).

So every value is bounded *before* it is written, by :data:`MAX_DEPTH` levels of its own: the
steps wrap a value in at most about a dozen levels (a session entry's arguments inside a view
inside a subject inside a check inside a tool's step), which keeps every document duraguard
writes far below the reader's limit, and every walk of a value in workflow code (digests,
provenance) far below Python's recursion limit. Sizes are bounded where each step is
(``max_subject_bytes``, a tool's result, a step's output); :data:`MAX_CALLS_PER_TURN` bounds
how many calls one model turn may propose.
"""

from __future__ import annotations

from typing import Any

READER_DEPTH = 201
"""The nesting at which the SDK's pydantic payload reader refuses a document (measured)."""
MAX_DEPTH = 64
"""The deepest a value duraguard writes into a step may be nested (objects and arrays)."""
MAX_ANSWER_BYTES = 1_048_576
"""The longest answer (UTF-8 bytes) a model step carries; a longer one is left out."""
MAX_CALLS_PER_TURN = 64
"""Tool calls one model turn may propose: the rest are not judged, not run and not recorded,
and the model is told so. A turn's calls are judged and settled in one workflow task: past a
few dozen, its CPU under a busy worker nears the SDK's 2-second deadlock detector."""


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` is nested (a scalar is 0, ``[]`` and ``{}`` are 1), worked out
    without recursion and stopping once past ``limit`` (it returns ``limit + 1`` then)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        v, d = pop()
        t = type(v)
        if t is dict or (t is not str and isinstance(v, dict)):
            items: Any = v.values()
        elif t is list or t is tuple or (t is not str and isinstance(v, list | tuple)):
            items = v
        else:
            continue
        d += 1
        if d > deepest:
            deepest = d
            if d > limit:
                return d
        for x in items:
            tx = type(x)
            if tx is dict or tx is list or tx is tuple or isinstance(x, dict | list | tuple):
                push((x, d))
    return deepest


def too_deep(value: Any, what: str, limit: int = MAX_DEPTH) -> str | None:
    """Why ``value`` may not cross a step boundary (``what`` names it), or ``None``."""
    depth = depth_of(value, limit)
    if depth <= limit:
        return None
    return (
        f"{what}: nested more than {limit} levels deep (objects and arrays), deeper than a step "
        f"carries (the reader on the other side stops at {READER_DEPTH - 1}); send a flatter value"
    )


def valid_text(s: str) -> str:
    """``s`` as valid Unicode: a lone surrogate (a model's JSON may escape one, ``"\\ud800"``; a
    file name read with ``surrogateescape`` holds one) cannot be written to history; it becomes
    U+FFFD, as a decoder's replacement does, and a pair stays the character it makes."""
    try:
        s.encode()
    except UnicodeEncodeError:
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return s


def valid_texts(value: Any) -> Any:
    """``value`` (arguments within :func:`too_deep`'s bound) with every text, keys too, valid."""
    t = type(value)
    if t is str:
        return valid_text(value)
    if t is dict:
        return {(valid_text(k) if type(k) is str else k): valid_texts(v) for k, v in value.items()}
    if t is list or t is tuple:
        return [valid_texts(v) for v in value]
    return value


__all__ = [
    "MAX_CALLS_PER_TURN",
    "MAX_DEPTH",
    "READER_DEPTH",
    "depth_of",
    "too_deep",
    "valid_text",
    "valid_texts",
]
