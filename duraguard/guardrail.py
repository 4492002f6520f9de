"""The Guardrail port (worker side) and the spec that names one from workflow code.

A ``Guardrail`` is a small class: its settings as fields, the placements it understands, and
one ``check`` method that returns a ``Verdict``. A ``GuardrailSpec`` is the frozen, serialisable
description of one (its kind and settings) that a workflow passes across the boundary; the
worker rebuilds the implementation from its registry.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._resources import Resources as Resources
from ._threads import UserThreads
from ._types import PLACEMENTS, OnError, Placement, Subject, Verdict
from .errors import ConfigurationError, UnknownGuardrail

DEFAULT_TIMEOUT = 10.0

USER_CODE_THREADS = 16
"""Threads that run user-written sync checks and classifiers. A check stuck past its timeout
keeps its thread (a thread cannot be stopped) and is logged by name; when every thread is held
so, later sync checks are refused at once (deny, partial, ``guardrail.saturated``) naming the
guardrails that hold them, and nothing else on the worker waits for them."""
USER_THREADS = UserThreads(USER_CODE_THREADS)


async def call_user(fn: Callable[..., Any], *args: Any, label: str | None = None) -> Any:
    """Call user code from a check: a coroutine function on the event loop, anything else on
    :data:`USER_THREADS`, so blocking code never stalls the worker and the caller's timeout
    always holds. ``label`` names the code in the warnings about a call that overran."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (an object with an async __call__)
    ):
        return await fn(*args)
    name = label or f"sync check {getattr(fn, '__qualname__', type(fn).__name__)!r}"
    out = await USER_THREADS.run(name, fn, *args)
    if inspect.isawaitable(out):
        out = await out
    return out


DEFAULT_PLACEMENTS: tuple[Placement, ...] = tuple(p for p in PLACEMENTS if p != "admission")
"""Where a guardrail runs unless it says otherwise: everywhere a call or a value is judged.
Admission (who may reach a tool at all) is opted into explicitly."""


class Guardrail(ABC):
    """A check on one subject. Subclass it, or wrap a function with :func:`guardrail`.

    Attributes:
        name: How verdicts name it (``by``); unique within one pass.
        placements: Where it runs; a subject at another placement skips it.
        timeout: Seconds it may take before it counts as unable to decide (deny, partial).
        on_error: ``deny`` (default) or ``fail``: what an unexpected error inside it does.
        remote: True where it calls out (a classifier, a database): its pass then runs as a
            regular activity rather than a local one.
        replaces: False where it never masks or rewrites a value (only allows, observes,
            refuses or asks): then it may judge a value inside the step that records it (a
            call inside its tool's step). A guardrail that may replace judges a value before
            any step records it, so that what it hides never reaches history; one that said
            False and returns ``mask`` or ``rewrite`` refuses instead (deny, partial).
    """

    name: str = "guardrail"
    placements: frozenset[Placement] = frozenset(DEFAULT_PLACEMENTS)
    timeout: float = DEFAULT_TIMEOUT
    on_error: OnError = "deny"
    remote: bool = False
    reads_session: bool = True
    replaces: bool = True

    @abstractmethod
    async def check(self, subject: Subject) -> Verdict:
        """Judge ``subject`` and say what should happen; never mutate anything."""

    def applies_to(self, subject: Subject) -> bool:
        return subject.placement in self.placements

    def spec(self) -> GuardrailSpec:
        """The spec that names this guardrail from workflow code (registered on the worker)."""
        return GuardrailSpec(
            kind="custom",
            name=self.name,
            placements=tuple(sorted(self.placements)),
            timeout=self.timeout,
            on_error=self.on_error,
            remote=self.remote,
            reads_session=self.reads_session,
            replaces=self.replaces,
        )


class GuardrailSpec(BaseModel):
    """A guardrail as workflow code names it: its kind, its settings, where it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    settings: dict[str, Any] = Field(default_factory=dict)
    placements: tuple[Placement, ...] = DEFAULT_PLACEMENTS
    timeout: float = DEFAULT_TIMEOUT
    on_error: OnError = "deny"
    remote: bool = False
    reads_session: bool = True
    """False for guardrails that judge the value alone: their passes carry no session view."""
    replaces: bool = Field(default=True, exclude_if=lambda v: v)
    """For a ``custom`` guardrail: False where it never masks or rewrites (see
    :attr:`Guardrail.replaces`). A built-in kind says so by its ``action`` setting."""

    def applies_to(self, placement: Placement) -> bool:
        return placement in self.placements

    @property
    def may_replace(self) -> bool:
        """Whether it may mask or rewrite what it judges: a built-in kind whose ``action`` is
        ``mask`` or ``rewrite``, a custom guardrail unless it said ``replaces=False``."""
        action = self.settings.get("action")
        if action is not None:
            return action in ("mask", "rewrite")
        return self.kind == "custom" and self.replaces


class Settings(BaseModel):
    """Base of each built-in kind's settings: validated when the spec is built."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Factory = Callable[[GuardrailSpec, "Resources"], Guardrail]


class Kind:
    """A registered kind of guardrail: its settings model and how to build it on the worker."""

    def __init__(
        self,
        name: str,
        settings: type[Settings],
        build: Factory,
        *,
        placements: Iterable[Placement],
        remote: bool = False,
        reads_session: bool = True,
    ) -> None:
        self.name = name
        self.settings = settings
        self.build = build
        self.placements = tuple(p for p in PLACEMENTS if p in set(placements))
        self.remote = remote
        self.reads_session = reads_session

    def spec(
        self,
        *,
        name: str | None = None,
        placements: Iterable[Placement] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_error: OnError = "deny",
        **settings: Any,
    ) -> GuardrailSpec:
        try:
            parsed = self.settings(**settings)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(settings)'}: {e['msg']}"
                for e in err.errors()
            )
            raise ConfigurationError(
                f"bad settings for guardrail kind {self.name!r}: {problems}"
            ) from None
        chosen = tuple(self.placements if placements is None else placements)
        _check_options(name or self.name, chosen, timeout, on_error)
        return GuardrailSpec(
            kind=self.name,
            name=name or self.name,
            settings=parsed.model_dump(mode="json"),
            placements=tuple(p for p in PLACEMENTS if p in chosen),
            timeout=timeout,
            on_error=on_error,
            remote=self.remote,
            reads_session=self.reads_session,
        )


def _check_options(name: str, placements: Iterable[Any], timeout: float, on_error: Any) -> None:
    """Refuse, when a guardrail is built, options that would make it never run or never decide."""
    if timeout <= 0:
        raise ConfigurationError(
            f"timeout for guardrail {name!r} must be > 0 seconds; got {timeout}"
        )
    unknown = [p for p in placements if p not in PLACEMENTS]
    if unknown:
        raise ConfigurationError(
            f"unknown placement {unknown[0]!r} for guardrail {name!r}; known: {', '.join(PLACEMENTS)}"
        )
    if on_error not in ("deny", "fail"):
        raise ConfigurationError(
            f"unknown on_error {on_error!r} for guardrail {name!r}; known: deny, fail"
        )


_KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    """Add a built-in or third-party kind to the registry (at import time, on both sides)."""
    _KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind:
    try:
        return _KINDS[name]
    except KeyError:
        known = ", ".join(sorted([*_KINDS, "custom"]))
        raise UnknownGuardrail(f"unknown guardrail kind {name!r}; known: {known}") from None


GuardrailLike = GuardrailSpec | Guardrail | Callable[..., Any]


def to_spec(item: GuardrailLike) -> GuardrailSpec:
    """Normalise what a user put in ``guardrails=[...]`` into a spec."""
    if isinstance(item, GuardrailSpec):
        return item
    if isinstance(item, Guardrail):
        return item.spec()
    raise ConfigurationError(
        f"guardrails=[...] takes specs such as schema(), pii(), moderation(), policy() or a "
        f"Guardrail instance; got {type(item).__name__}. Wrap a function with @duraguard.guardrail."
    )


def to_specs(items: Sequence[GuardrailLike] | None) -> tuple[GuardrailSpec, ...]:
    """Specs for ``items`` (specs, guardrails, plain functions), their names unique."""
    specs = tuple(to_spec(i) for i in items or ())
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise ConfigurationError(
                f"two guardrails are named {s.name!r} in one list; give one of them name=... so "
                "verdicts can say which decided"
            )
        seen.add(s.name)
    return specs


def build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    """Rebuild the implementation a spec names, on the worker."""
    if spec.kind == "custom":
        found: Guardrail | None = resources.guardrails.get(spec.name)
        if found is None:
            known = ", ".join(sorted(resources.guardrails)) or "none"
            raise UnknownGuardrail(
                f"no custom guardrail named {spec.name!r} is registered on this worker; "
                f"registered: {known}. Pass it to DuraguardPlugin(guardrails=[...])."
            )
        return found
    impl = get_kind(spec.kind).build(spec, resources)
    impl.name = spec.name
    impl.placements = frozenset(spec.placements)
    impl.timeout = spec.timeout
    impl.on_error = spec.on_error
    return impl


class FunctionGuardrail(Guardrail):
    """A guardrail made from a plain function ``(subject) -> Verdict | bool | None``."""

    def __init__(
        self,
        fn: Callable[[Subject], Verdict | bool | Awaitable[Verdict | bool | None] | None],
        *,
        name: str,
        placements: Iterable[Placement],
        timeout: float = DEFAULT_TIMEOUT,
        on_error: OnError = "deny",
        remote: bool = False,
        reads_session: bool = True,
        replaces: bool = True,
    ) -> None:
        placements = tuple(placements)
        _check_options(name, placements, timeout, on_error)
        self.fn = fn
        self.name = name
        self.placements = frozenset(placements)
        self.timeout = timeout
        self.on_error = on_error
        self.remote = remote
        self.reads_session = reads_session
        self.replaces = replaces

    async def check(self, subject: Subject) -> Verdict:
        out = await call_user(self.fn, subject, label=f"guardrail {self.name!r}")
        if isinstance(out, Verdict):
            return out
        if out is None or out is True:
            return Verdict.allow()
        if out is False:
            return Verdict.deny(f"{self.name} refused this {subject.placement} value")
        raise TypeError(
            f"guardrail {self.name!r} returned {type(out).__name__}; return a Verdict, True/False or None"
        )


def guardrail(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    placements: Iterable[Placement] = ("tool-args",),
    timeout: float = DEFAULT_TIMEOUT,
    on_error: OnError = "deny",
    remote: bool = False,
    reads_session: bool = True,
    replaces: bool = True,
) -> Any:
    """Turn a function into a :class:`Guardrail` (usable as a decorator, with or without args).

    Register the result with ``DuraguardPlugin(guardrails=[...])`` and put the same object in
    ``guardrails=[...]`` in workflow code: the workflow sends only its name. ``reads_session=
    False`` says it reads only the value judged: it is then sent no session view, and
    ``agent_loop`` can judge the prompt and the final answer with it inside model steps.
    ``replaces=False`` says it never masks or rewrites: it may then judge a call inside its
    tool's step (see :attr:`Guardrail.replaces`).
    """

    def wrap(f: Callable[..., Any]) -> FunctionGuardrail:
        return FunctionGuardrail(
            f,
            name=name or f.__name__.replace("_", "-"),
            placements=placements,
            timeout=timeout,
            on_error=on_error,
            remote=remote,
            reads_session=reads_session,
            replaces=replaces,
        )

    return wrap(fn) if fn is not None else wrap


__all__ = [
    "Guardrail",
    "GuardrailSpec",
    "Kind",
    "Resources",
    "Settings",
    "build",
    "call_user",
    "guardrail",
    "register_kind",
    "to_spec",
    "to_specs",
]
