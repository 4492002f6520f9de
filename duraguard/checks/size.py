"""``size_cap``: refuse a tool input (or result) whose serialised JSON is longer than a cap.

A content guardrail: it needs nothing but the value. Facing the input (``tool-args``) it stops
an oversized payload before the tool runs; facing the result (``tool-result``) it stops an
oversized result before the model reads it. The refusal names the length, the cap and the tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from .._deadline import spend
from .._types import Action, Detection, Placement, Subject, Verdict
from ..errors import ConfigurationError
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind

Direction = Literal["input", "output", "both"]
"""Which way the cap faces: the tool's input, its result, or both."""

_DIRECTIONS: dict[str, tuple[Placement, ...]] = {
    "input": ("tool-args",),
    "output": ("tool-result",),
    "both": ("tool-args", "tool-result"),
}


def json_length(value: Any) -> int:
    """Characters in the compact JSON of ``value`` (what a tool or a model would receive)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str))


class SizeSettings(Settings):
    """What ``size_cap(...)`` was given: the most characters, what a longer value does."""

    max_chars: int = Field(gt=0)
    action: Action = "deny"


class SizeCapGuardrail(Guardrail):
    """Refuses a value whose serialised JSON is longer than ``max_chars``."""

    def __init__(self, settings: SizeSettings) -> None:
        self.settings = settings

    async def check(self, subject: Subject) -> Verdict:
        length = json_length(subject.value)  # one C-speed pass: milliseconds for a MiB
        spend(length)
        cap = self.settings.max_chars
        if length <= cap:
            return Verdict.allow()
        tool = subject.tool or "(no tool)"
        if subject.placement == "tool-result":
            what = f"the result of tool {tool!r}"
            fix = "ask for less (a narrower query, fewer fields or a smaller page)"
        else:
            what = f"the input to tool {tool!r}"
            fix = "send less (fewer records, a shorter text or a reference) and call again"
        return Verdict(
            action=self.settings.action,
            reason=f"{what} is {length:,} characters of JSON, over the cap of {cap:,}; {fix}",
            detections=(Detection(rule="size.max_chars", detail=f"{length}>{cap}"),),
            check="size",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return SizeCapGuardrail(SizeSettings(**spec.settings))


KIND = register_kind(
    Kind("size", SizeSettings, _build, placements=("tool-args", "tool-result"), reads_session=False)
)


def size_cap(
    *,
    max_chars: int,
    direction: Direction = "input",
    action: Action = "deny",
    name: str | None = None,
    placements: Iterable[Placement] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Cap the serialised JSON length of a tool's input, result, or both.

    Args:
        max_chars: The longest JSON (in characters) let through; must be > 0.
        direction: ``input`` (default, ``tool-args``), ``output`` (``tool-result``) or ``both``.
        action: What an oversized value gets; ``deny`` lets the model send less next turn.
        name: How verdicts name it (default ``size``).
        placements: Where it runs, overriding ``direction``.
    """
    if direction not in _DIRECTIONS:
        raise ConfigurationError(
            f"unknown direction {direction!r} for size_cap; known: {', '.join(_DIRECTIONS)}"
        )
    chosen = tuple(placements) if placements is not None else _DIRECTIONS[direction]
    return KIND.spec(
        name=name, placements=chosen, timeout=timeout, max_chars=max_chars, action=action
    )
