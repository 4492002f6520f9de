"""What the worker lends guardrails (:class:`Resources`), apart from the port that uses it.

A check reads its resources (a tool's schema, a classifier) while the engine, through
:mod:`duraguard.guardrail`, is running it: kept here, below the port, that read goes down the
layer order instead of back into the module that called the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Resources:
    """What the worker lends guardrails: classifiers, tools, custom guardrails, stores, keys.

    Built by the plugin from its options; a plain-Python caller builds one directly.
    ``guardrails`` maps names to :class:`duraguard.guardrail.Guardrail` instances (the custom
    guardrails a spec names by ``kind="custom"``).
    """

    def __init__(
        self,
        *,
        classifiers: Mapping[str, Any] | None = None,
        tools: Mapping[str, Any] | None = None,
        guardrails: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.classifiers = dict(classifiers or {})
        self.tools = dict(tools or {})
        self.guardrails = dict(guardrails or {})
        self.extra = dict(extra or {})

    def tool_schema(self, tool: str | None) -> dict[str, Any] | None:
        found = self.tools.get(tool or "")
        return getattr(found, "input_schema", None) if found is not None else None


__all__ = ["Resources"]
