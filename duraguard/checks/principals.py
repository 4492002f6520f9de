"""Auth guardrails: the call's input *and* the person the work runs for.

``principals(allow=[...])`` lets only the named principals invoke a tool (useful for pinning
system tools to service accounts). :class:`AuthGuardrail` is the base for your own: subclass it,
name the kind and the store it reads, and write ``authorize``::

    class OrderOwner(AuthGuardrail, kind="order-owner", store="orders"):
        \"\"\"Only the customer who placed an order may refund it.\"\"\"

        async def authorize(self, principal, tool, args, store):
            owner = await store.owner_of(args["order_id"])
            if owner != principal:
                return f"{principal!r} does not own order {args['order_id']!r}"
            return True

    # worker: the store is lent by name
    DuraguardPlugin(..., resources={"orders": OrdersDb(...)})  # -> Resources.extra["orders"]
    # workflow code: only the spec crosses
    guardrails=[OrderOwner.spec_for(tools=["refund_card"])]

Auth guardrails run on the input side only (``tool-args``): a refusal has to come before the act.
A missing principal is refused, never waved through.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any, ClassVar

from pydantic import Field, field_validator

from .._types import Action, Detection, Subject, Verdict
from ..errors import ConfigurationError
from ..guardrail import (
    DEFAULT_TIMEOUT,
    Guardrail,
    GuardrailSpec,
    Kind,
    Resources,
    Settings,
    get_kind,
    register_kind,
)


def tool_matches(tool: str | None, patterns: Iterable[str] | None) -> bool:
    """Whether ``tool`` is one of ``patterns`` (fnmatch, case-sensitive); ``None`` means all."""
    if patterns is None:
        return True
    return tool is not None and any(fnmatchcase(tool, p) for p in patterns)


def _no_principal(tool: str | None) -> str:
    return (
        f"tool {tool or '(no tool)'!r} needs a principal and this run has none; start the "
        "workflow under `with duraguard.principal(...)` so the person it runs for is known"
    )


class PrincipalsSettings(Settings):
    """What ``principals(...)`` was given: who may reach the tools it names."""

    allow: tuple[str, ...]
    tools: tuple[str, ...] | None = None
    action: Action = "deny"

    @field_validator("allow", "tools", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        if isinstance(v, str):
            return (v,)
        return v

    @field_validator("allow")
    @classmethod
    def _not_empty(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("allow=[...] must name at least one principal")
        return v


class PrincipalAllowList(Guardrail):
    """Lets only the named principals invoke the tool(s); refuses anyone else, a missing one too."""

    def __init__(self, settings: PrincipalsSettings) -> None:
        self.settings = settings

    async def check(self, subject: Subject) -> Verdict:
        if not tool_matches(subject.tool, self.settings.tools):
            return Verdict.allow()
        principal = subject.context.principal
        allowed = self.settings.allow
        if principal is not None and principal in allowed:
            return Verdict.allow()
        who = "a run with no principal" if principal is None else f"principal {principal!r}"
        return Verdict(
            action=self.settings.action,
            reason=(
                f"{who} may not call tool {subject.tool or '(no tool)'!r}; "
                f"principals allowed: {', '.join(allowed)}"
            ),
            detections=(Detection(rule="principals.allow", detail=principal),),
            check="principals",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return PrincipalAllowList(PrincipalsSettings(**spec.settings))


KIND = register_kind(
    Kind("principals", PrincipalsSettings, _build, placements=("tool-args",), reads_session=False)
)


def principals(
    *,
    allow: Iterable[str],
    tools: Iterable[str] | None = None,
    action: Action = "deny",
    name: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> GuardrailSpec:
    """Only the principals in ``allow`` may invoke ``tools`` (fnmatch patterns; ``None``: all).

    A run with no principal is refused too. The refusal names the principal, the tool and the
    principals allowed.
    """
    return KIND.spec(
        name=name,
        timeout=timeout,
        allow=tuple(allow),
        tools=None if tools is None else tuple(tools),
        action=action,
    )


class AuthSettings(Settings):
    """What an :class:`AuthGuardrail` subclass was given: its tools, its free options."""

    tools: tuple[str, ...] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    """Free settings for the subclass, read as ``self.options``."""


class AuthGuardrail(Guardrail):
    """Base of an auth guardrail that looks rights up in the worker's own store.

    Subclass with ``kind=`` (the registered kind name, what workflow specs carry) and
    ``store=`` (the name of the resource in ``Resources.extra``; omit for none), and implement
    :meth:`authorize`. Defining the class registers the kind; import its module on the worker.

    ``authorize`` returns ``True`` or ``None`` to allow, ``False`` or a reason (``str``) to refuse,
    or a full :class:`~duraguard.Verdict`. It is never called without a principal.
    """

    kind: ClassVar[str] = ""
    store: ClassVar[str | None] = None
    placements = frozenset({"tool-args"})

    def __init_subclass__(cls, *, kind: str | None = None, store: str | None = None, **kw: Any):
        super().__init_subclass__(**kw)
        if store is not None:
            cls.store = store
        if kind is None:
            return
        if inspect.isabstract(cls):
            raise ConfigurationError(
                f"auth guardrail kind {kind!r}: {cls.__name__} must implement authorize()"
            )
        cls.kind = kind
        cls.name = kind

        def build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
            return cls(settings=AuthSettings(**spec.settings), resources=resources)

        register_kind(Kind(kind, AuthSettings, build, placements=("tool-args",), remote=True))

    def __init__(
        self, *, settings: AuthSettings | None = None, resources: Resources | None = None
    ) -> None:
        self.settings = settings or AuthSettings()
        self.resources = resources or Resources()

    @property
    def options(self) -> dict[str, Any]:
        return self.settings.options

    @classmethod
    def spec_for(
        cls,
        *,
        tools: Iterable[str] | None = None,
        name: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        **options: Any,
    ) -> GuardrailSpec:
        """The spec naming this guardrail from workflow code (``tools``: fnmatch patterns)."""
        if not cls.kind:
            raise ConfigurationError(
                f"{cls.__name__} has no kind; declare it as `class {cls.__name__}(AuthGuardrail, "
                'kind="my-kind", store="my-store")`'
            )
        return get_kind(cls.kind).spec(
            name=name,
            timeout=timeout,
            tools=None if tools is None else tuple(tools),
            options=options,
        )

    def spec(self) -> GuardrailSpec:
        """This instance as a spec of its kind, so the worker rebuilds it with its store."""
        return type(self).spec_for(
            tools=self.settings.tools, name=self.name, timeout=self.timeout, **self.options
        )

    @abstractmethod
    async def authorize(
        self, principal: str, tool: str | None, args: Any, store: Any
    ) -> Verdict | bool | str | None:
        """Decide whether ``principal`` may call ``tool`` with ``args``, reading ``store``."""

    async def check(self, subject: Subject) -> Verdict:
        if not tool_matches(subject.tool, self.settings.tools):
            return Verdict.allow()
        principal = subject.context.principal
        if principal is None:
            return Verdict.deny(
                _no_principal(subject.tool), check=self.kind, detections=_detected(self.kind)
            )
        store: Any = None
        if self.store is not None:
            if self.store not in self.resources.extra:
                lent = ", ".join(sorted(self.resources.extra)) or "none"
                raise ConfigurationError(
                    f"auth guardrail {self.name!r} reads the store {self.store!r}, which this "
                    f"worker does not lend (lent: {lent}); pass it to the plugin's resources"
                )
            store = self.resources.extra[self.store]
        out = await self.authorize(principal, subject.tool, subject.value, store)
        if isinstance(out, Verdict):
            return out
        if out is None or out is True:
            return Verdict.allow()
        if out is False:
            reason = (
                f"principal {principal!r} may not call tool {subject.tool!r} with these arguments"
            )
        elif isinstance(out, str):
            reason = out
        else:
            raise TypeError(
                f"{type(self).__name__}.authorize returned {type(out).__name__}; "
                "return True/None, False, a reason string or a Verdict"
            )
        return Verdict.deny(reason, check=self.kind, detections=_detected(self.kind))


def _detected(kind: str) -> tuple[Detection, ...]:
    return (Detection(rule=f"{kind}.authorize"),)
