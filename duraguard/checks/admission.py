"""Admission guardrails: who may reach a tool at all, decided before any call exists.

An admission guardrail has no input to judge. It reads ``(principal, agent, tool)`` from a
subject at placement ``admission`` whose value is ``{"tool": name}``, and runs in two places:

* when the loop offers tools to the model: a refused tool is never offered;
* at dispatch, on every call: the guarantee, whatever route the call took.

Both go through :func:`admit`. A tool's own admission rule (``Tool.agents``) and the rules
attached to tools you do not own (:class:`AdmissionRegistry`, by fnmatch pattern or predicate)
run together with the ones the workflow names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import field_validator

from .._types import PLACEMENTS, Action, Context, Detection, Subject, Verdict
from ..errors import ConfigurationError
from ..guardrail import (
    DEFAULT_TIMEOUT,
    Guardrail,
    GuardrailLike,
    GuardrailSpec,
    Kind,
    Resources,
    Settings,
    register_kind,
)
from .principals import tool_matches

ToolPredicate = Callable[[str], bool]
"""Decides from a tool's name whether a registered admission guardrail applies to it."""


class AgentsSettings(Settings):
    """What ``agents(...)`` was given: the agents allowed to reach the tools it names."""

    allow: tuple[str, ...]
    tools: tuple[str, ...] | None = None
    action: Action = "deny"

    @field_validator("allow", "tools", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return (v,) if isinstance(v, str) else v

    @field_validator("allow")
    @classmethod
    def _not_empty(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("allow=[...] must name at least one agent")
        return v


class AgentAllowList(Guardrail):
    """Pins tools to the agents built around them; refuses any other caller, a direct call too."""

    placements = frozenset({"admission"})

    def __init__(self, settings: AgentsSettings) -> None:
        self.settings = settings

    async def check(self, subject: Subject) -> Verdict:
        tool = subject.tool
        if not tool_matches(tool, self.settings.tools):
            return Verdict.allow()
        agent = subject.context.agent
        if agent is not None and agent in self.settings.allow:
            return Verdict.allow()
        caller = "a direct call (no agent)" if agent is None else f"agent {agent!r}"
        return Verdict(
            action=self.settings.action,
            reason=(
                f"tool {tool or '(no tool)'!r} may not be called by {caller}; "
                f"agents allowed: {', '.join(self.settings.allow)}"
            ),
            detections=(Detection(rule="agents.allow", detail=agent),),
            check="agents",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return AgentAllowList(AgentsSettings(**spec.settings))


KIND = register_kind(
    Kind("agents", AgentsSettings, _build, placements=("admission",), reads_session=False)
)


def agents(
    *,
    allow: Iterable[str],
    tools: Iterable[str] | None = None,
    action: Action = "deny",
    name: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> GuardrailSpec:
    """Only the agents in ``allow`` may reach ``tools`` (fnmatch patterns; ``None``: every tool).

    A direct call (no agent) is refused too. The refusal names the tool, the caller and the
    agents allowed. Runs at placement ``admission`` only.
    """
    return KIND.spec(
        name=name,
        timeout=timeout,
        allow=tuple(allow),
        tools=None if tools is None else tuple(tools),
        action=action,
    )


@dataclass(frozen=True)
class _Attached:
    guardrail: GuardrailLike
    patterns: tuple[str, ...] | None
    when: ToolPredicate | None

    def applies(self, tool: str) -> bool:
        if self.patterns is not None and not tool_matches(tool, self.patterns):
            return False
        return self.when is None or bool(self.when(tool))


class AdmissionRegistry:
    """Admission guardrails attached to tools you do not own, by name pattern or predicate.

    Worker side: the plugin holds one and :func:`admit` reads it. Example::

        registry = AdmissionRegistry()
        registry.register(agents(allow=["payments"]), tools=["stripe_*"])
        registry.register(principals_only_admission, when=lambda tool: tool.startswith("admin_"))
    """

    def __init__(self) -> None:
        self._attached: list[_Attached] = []

    def register(
        self,
        guardrail: GuardrailLike,
        *,
        tools: str | Iterable[str] | None = None,
        when: ToolPredicate | None = None,
    ) -> None:
        """Attach ``guardrail`` to the tools matching ``tools`` (fnmatch) and/or ``when``.

        Raises:
            ConfigurationError: neither ``tools`` nor ``when`` given (attach to every tool with
                ``tools="*"``), or the guardrail does not run at placement ``admission``.
        """
        if tools is None and when is None:
            raise ConfigurationError(
                'register(...) needs tools=[patterns] or when=predicate; use tools="*" for all'
            )
        if not _declares_admission(guardrail):
            raise ConfigurationError(
                f"{_name_of(guardrail)!r} does not run at placement 'admission'; register an "
                "admission guardrail such as agents(allow=[...])"
            )
        patterns = (tools,) if isinstance(tools, str) else None if tools is None else tuple(tools)
        self._attached.append(_Attached(guardrail, patterns, when))

    def for_tool(self, tool: str) -> list[GuardrailLike]:
        """The admission guardrails attached to ``tool``, in registration order."""
        return [a.guardrail for a in self._attached if a.applies(tool)]

    def __len__(self) -> int:
        return len(self._attached)


def _placements_of(item: GuardrailLike) -> frozenset[str]:
    if isinstance(item, GuardrailSpec):
        return frozenset(item.placements)
    if isinstance(item, Guardrail):
        return frozenset(item.placements)
    return frozenset()


def _declares_admission(item: GuardrailLike) -> bool:
    # A guardrail left on the "everywhere" default predates admission and was not written to
    # judge {"tool": name}; it must opt in by naming "admission" among fewer placements.
    found = _placements_of(item)
    return "admission" in found and found != frozenset(PLACEMENTS)


def _name_of(item: GuardrailLike) -> str:
    return str(getattr(item, "name", None) or getattr(item, "__name__", type(item).__name__))


def admission_subject(
    principal: str | None,
    agent: str | None,
    tool: str,
    context: Context | None = None,
) -> Subject:
    """The subject an admission guardrail judges: value ``{"tool": tool}``, no arguments."""
    base = context or Context()
    ctx = base.model_copy(update={"principal": principal, "agent": agent})
    return Subject(placement="admission", value={"tool": tool}, tool=tool, context=ctx)


def _own_rules(tool: str, resources: Resources) -> list[GuardrailLike]:
    found = resources.tools.get(tool)
    allowed = getattr(found, "agents", None)
    if allowed is None:
        return []
    if not allowed:
        # An empty allow list means no agent may reach the tool.
        return [_Nobody(tool)]
    return [agents(allow=sorted(allowed), tools=[tool], name="tool-agents")]


class _Nobody(Guardrail):
    placements = frozenset({"admission"})
    name = "tool-agents"

    def __init__(self, tool: str) -> None:
        self.tool = tool

    async def check(self, subject: Subject) -> Verdict:
        return Verdict.deny(f"tool {self.tool!r} is declared with agents=[]: no agent may call it")
