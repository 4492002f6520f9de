"""The ``policy`` guardrail kind: the four stages of the tool-call policy as one check.

Refused maps to ``deny``, asked to ``approve`` (with the role a rule names) and allowed to
``allow``; every verdict that is not an allow names the deciding check (``policy.order``,
``policy.grounded``, ...). Anything the policy cannot decide is ``deny`` with outcome
``partial``, never an allow.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..._types import ApprovalAsk, Detection, SessionView, Subject, Verdict
from ...errors import ConfigurationError
from ...guardrail import Guardrail, GuardrailSpec, Kind, Resources, register_kind
from . import prechecks, said, toolcheck
from .call import Call, Stop
from .kinds import classify
from .presets import PRESETS, Preset
from .registry import PolicyRegistry
from .settings import CHECKS, RECORDED, Grounding, Mode, PolicySettings, TaintPolicy


def _kind(call: Call | None) -> tuple[Detection, ...]:
    """How the tool's kind was read, where nobody marked it: never silently a read."""
    r = call.kind_reading if call is not None else None
    if r is None or r.source in ("file", "mark"):
        return ()
    return (
        Detection(rule="policy.tool_kinds", detected=False, score=r.confidence, detail=r.detail),
    )


def _verdict(
    stop: Stop, settings: PolicySettings, notes: Iterable[Stop] = (), call: Call | None = None
) -> Verdict:
    check = f"policy.{stop.check}"
    detections = (
        Detection(rule=check, path=stop.path),
        *(Detection(rule=f"policy.{n.check}", path=n.path) for n in notes),
        *_kind(call),
    )
    if not stop.ask:
        return Verdict(
            action="deny",
            outcome="partial" if stop.partial else "complete",
            check=check,
            reason=stop.reason,
            detections=detections,
        )
    prompt = " ".join([stop.reason, *(f"Also: {n.reason}" for n in notes)])
    return Verdict(
        action="approve",
        check=check,
        reason=stop.reason,
        detections=detections,
        ask=ApprovalAsk(role=stop.role, prompt=prompt, expires_in_seconds=settings.ask_expires_in),
    )


class PolicyGuardrail(Guardrail):
    """The staged tool-call policy: tool kinds, admission chain, tool check, what was said."""

    def __init__(self, settings: PolicySettings | dict[str, Any], resources: Resources) -> None:
        if isinstance(settings, PolicySettings):
            settings = settings.model_dump(mode="json")
        self.settings, self._first, self._last = _parsed(settings)
        self.resources = resources

    def _registry(self) -> PolicyRegistry:
        found = self.resources.extra.get(self.settings.registry)
        if isinstance(found, PolicyRegistry):
            return found
        if found is None:
            # No registry: the code catalogue alone, no rules, nothing withdrawn.
            cached = self.resources.extra.get("_policy_default")
            if not isinstance(cached, PolicyRegistry):
                cached = PolicyRegistry()
                self.resources.extra["_policy_default"] = cached
            return cached
        raise TypeError(
            f"Resources.extra[{self.settings.registry!r}] is a {type(found).__name__}, not a PolicyRegistry"
        )

    async def check(self, subject: Subject) -> Verdict:
        try:
            return self.decide(subject)
        except Exception as err:  # fail closed, and say which part could not decide
            return Verdict(
                action="deny",
                outcome="partial",
                check="policy.registry",
                reason=f"the policy could not decide ({type(err).__name__}: {err}); the call is refused until it can",
                detections=(Detection(rule="policy.error"),),
            )

    def decide(self, subject: Subject) -> Verdict:
        """The verdict for ``subject`` (synchronous; :meth:`check` wraps it to fail closed)."""
        settings = self.settings
        if not isinstance(subject.value, Mapping):
            return _verdict(
                Stop(
                    "arguments",
                    f"the arguments must be a JSON object; got {type(subject.value).__name__}",
                ),
                settings,
            )
        snap = self._registry().snapshot(self.resources.tools)
        tool = subject.tool or ""
        call = Call(
            subject=subject,
            settings=settings,
            snap=snap,
            keys=self.resources.extra.get("approvers"),
            tool=tool,
            args=subject.value,
            session=subject.session or SessionView(),
            info=snap.catalogue.get(tool),
        )
        classify(call)
        for fn in self._first:
            stop = fn(call)
            if stop is not None:
                return _verdict(stop, settings, call=call)
        answer = call.asks[0] if call.asks else None
        notes: list[Stop] = list(call.asks[1:])
        vouched = call.confirmed or call.plan_step_ok
        for fn in self._last:
            stop = fn(call)
            if stop is None:
                continue
            if not stop.ask:
                return _verdict(stop, settings, call=call)  # strict mode: a refusal stands
            if vouched:
                continue  # the person already said yes to these exact values
            if answer is None:
                answer = stop
            else:
                notes.append(stop)  # shown to the person beside the ask that decides
        if answer is None:
            kind = _kind(call)
            return Verdict.allow(detections=kind) if kind else Verdict.allow()
        return _verdict(answer, settings, notes, call)


_SETTINGS: dict[str, tuple[PolicySettings, tuple[Check, ...], tuple[Check, ...]]] = {}
Check = Callable[[Call], Stop | None]


def _parsed(
    settings: dict[str, Any],
) -> tuple[PolicySettings, tuple[Check, ...], tuple[Check, ...]]:
    """The settings, and the checks they turn on (before and in the last stage), once per spec."""
    key = repr(sorted(settings.items()))
    hit = _SETTINGS.get(key)
    if hit is None:
        parsed = PolicySettings(**settings)
        first = tuple(fn for name, fn in (*prechecks.CHECKS, *toolcheck.CHECKS) if parsed.on(name))
        last = tuple(fn for name, fn in said.CHECKS if parsed.on(name))
        hit = (parsed, first, last)
        if len(_SETTINGS) >= 256:
            _SETTINGS.pop(next(iter(_SETTINGS)))
        _SETTINGS[key] = hit
    return hit


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    # Settings are parsed once per distinct spec: the pass rebuilds the guardrail every call.
    return PolicyGuardrail(spec.settings, resources)


KIND = register_kind(Kind("policy", PolicySettings, _build, placements=("tool-args",)))


_BASE: dict[str, Any] = {
    "infer": True,
    "taint_policy": "confirm",
    "grounded": "confirm",
    "asked_to_send": "confirm",
    "asked_destination": "confirm",
    "confirm_read": "confirm",
}


def policy(
    *,
    preset: Preset | None = None,
    checks: Iterable[str] | None = None,
    infer: bool | None = None,
    taint_policy: TaintPolicy | None = None,
    grounded: Grounding | None = None,
    asked_to_send: Mode | None = None,
    asked_destination: Mode | None = None,
    confirm_read: Mode | None = None,
    allow: Iterable[str] = (),
    max_tier: int | None = None,
    payment_cap: float | None = None,
    registry: str = "policy",
    ask_expires_in: float | None = None,
    name: str | None = None,
    timeout: float = 10.0,
    s1_veto: Mode | None = None,
    s2_veto: Mode | None = None,
) -> GuardrailSpec:
    """The tool-call policy: tool kinds, admission chain, tool check, checks of what was said.

    Args:
        preset: ``strict``, ``balanced`` or ``permissive`` (see :data:`PRESETS`); settings
            given here win over the preset's. ``None``: the specification's defaults.
        checks: Turn on only these (see :data:`CHECKS`); the checks that cannot be switched off
            run anyway. ``None`` runs them all.
        infer: Infer the kind of unmarked tools from annotations, name, description, arguments.
        taint_policy: After outside content, a write or send is ``task`` (judged by what the
            person asked for and where its values came from), ``confirm`` (judged so, and
            asked where that lets it run), ``refuse`` (refused) or ``off``.
        grounded: ``confirm`` (ask about a value of a write nobody gave) or ``off``.
        asked_to_send: ``off``, ``refuse`` or ``confirm``: a turn that asks to send, a call
            that does not.
        asked_destination: The same modes: a destination the person named that the call does
            not take.
        confirm_read: The same modes: the call's values read against the person's latest turn.
        allow: Addresses allowed although private (names, ``*.suffix``, IPs, CIDRs).
        max_tier: The highest tool tier allowed in the session.
        payment_cap: The most one call of a payment tool may pay (a tool's own cap wins).
        registry: Where the :class:`PolicyRegistry` sits in ``Resources.extra``.
        ask_expires_in: Seconds a person has to answer an ask.
        s1_veto: Deprecated: ``asked_to_send`` (it warns).
        s2_veto: Deprecated: ``asked_destination`` (it warns).

    Raises:
        ConfigurationError: An unknown preset, check or mode.
    """
    if preset is not None and preset not in PRESETS:
        raise ConfigurationError(f"unknown policy preset {preset!r}; known: {', '.join(PRESETS)}")
    asked_to_send = _renamed("s1_veto", s1_veto, "asked_to_send", asked_to_send)
    asked_destination = _renamed("s2_veto", s2_veto, "asked_destination", asked_destination)
    for new, old in RECORDED.items():
        if checks is not None and old in (checks := tuple(checks)):
            warnings.warn(
                f"policy check {old!r} is now {new!r}; name it so in checks=[...]",
                DeprecationWarning,
                stacklevel=2,
            )
    given = {
        "infer": infer,
        "taint_policy": taint_policy,
        "grounded": grounded,
        "asked_to_send": asked_to_send,
        "asked_destination": asked_destination,
        "confirm_read": confirm_read,
    }
    chosen = {**_BASE, **(PRESETS[preset] if preset else {})}
    chosen.update({k: v for k, v in given.items() if v is not None})
    return KIND.spec(
        name=name,
        timeout=timeout,
        preset=preset,
        checks=tuple(checks) if checks is not None else None,
        allow=tuple(allow),
        max_tier=max_tier,
        payment_cap=payment_cap,
        registry=registry,
        ask_expires_in=ask_expires_in,
        **chosen,
    )


def _renamed(old: str, was: Mode | None, new: str, now: Mode | None) -> Mode | None:
    """A setting given by its earlier name: taken, with a warning (the new name wins)."""
    if was is None:
        return now
    warnings.warn(f"policy({old}=...) is now policy({new}=...)", DeprecationWarning, stacklevel=3)
    return now if now is not None else was


__all__ = ["CHECKS", "PolicyGuardrail", "policy"]
