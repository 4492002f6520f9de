"""A guarded call in a framework's own shapes: how it names a call between two hooks, what
its model reads of a refusal, and a replaced output back in its output type."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from ._canonical import canonical_json
from ._outcome import CallOutcome


def call_key(call_id: str, tool: str, args: Any) -> tuple[str, str, str]:
    """A call as a framework names it between two hooks: its id, its tool and the arguments it
    runs with (a model may repeat an id; the arguments tell such calls apart)."""
    try:
        return (call_id, tool, canonical_json(args))
    except Exception:
        return (call_id, tool, repr(args))


def changed(outcome: CallOutcome, raw: Any) -> bool:
    """Whether the model must read something other than what the tool returned: a refusal, a
    masked or rewritten result, or an error the result could not be recorded for."""
    if not outcome.ran or outcome.refusal is not None or outcome.error is not None:
        return True
    try:
        return bool(outcome.result != to_jsonable_python(raw))
    except (ValueError, TypeError):
        return True


def for_model(outcome: CallOutcome) -> str:
    """What the model reads of an outcome it must not read the tool's own result for, as text."""
    shown = outcome.result
    return shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)


def as_type(kind: Any, value: Any) -> Any:
    """A replaced output back in the framework's output type (a model, a dataclass, a list of
    them), where it fits; else as replaced (a mask that made it another shape)."""
    if kind is None or kind is Any:
        return value
    if isinstance(kind, type) and isinstance(value, kind):
        return value
    try:
        return TypeAdapter(kind).validate_python(value)
    except (ValidationError, TypeError, ValueError):
        return value


__all__ = ["as_type", "call_key", "changed", "for_model"]
