"""The policy's settings and its list of checks, in the order a call meets them."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from ...guardrail import Settings

Mode = Literal["off", "refuse", "confirm"]
"""How a turn-reading check acts: ``off``; ``refuse``, a strict block; ``confirm``, ask (default)."""
TaintPolicy = Literal["off", "confirm", "refuse", "task"]
"""What a write or send does after outside content entered the session: ``off``, not judged;
``confirm`` (default), judged as ``task`` and, where that lets it run, asked (the session-wide
ask); ``refuse``, refused; ``task``, runs where the person's own turn asks for that action and
no value was steered by the content (refused or asked otherwise)."""
Grounding = Literal["off", "confirm"]
"""Grounding asks about a value nobody gave (``confirm``) or is off; it never refuses."""

KINDS_STAGE = ("tool_kinds",)
ADMISSION = ("withdrawn", "address", "plan_step", "tier", "labels", "payment_limit")
TOOL_CHECK = (
    "allowed_tools", "session_record", "arguments", "destinations", "order", "undo",
    "your_rules", "outside_content", "confirmation", "any_other_write",
)  # fmt: skip
SAID = ("grounded", "asked_to_send", "asked_destination", "confirm_read")
RECORDED = {"asked_to_send": "s1_veto", "asked_destination": "s2_veto"}
"""Checks and settings whose earlier names a run's history records (in its guardrails' specs,
which bind its steps' ids): a spec is written with these, so a run started before the rename
replays, and code given either name builds the same spec. The earlier names are deprecated."""
CHECKS: tuple[str, ...] = (*KINDS_STAGE, *ADMISSION, *TOOL_CHECK, *SAID)
"""Every check, in the order a call meets them; the first that stops a call decides."""

ALWAYS_ON: frozenset[str] = frozenset(
    {"withdrawn", "allowed_tools", "session_record", "confirmation", "any_other_write"}
)
"""Checks that run whether listed in ``checks=[...]`` or not."""


class PolicySettings(Settings):
    """What ``policy(...)`` was given; validated when the spec is built."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, validate_by_alias=True,
        serialize_by_alias=True,
    )  # fmt: skip

    checks: tuple[str, ...] | None = None
    """Only these checks run (plus :data:`ALWAYS_ON`); ``None``: all of them."""
    infer: bool = True
    """Infer the kind of tools nobody marked from their name, description and arguments."""
    preset: str | None = None
    """The named preset these settings started from (see :data:`PRESETS`), for the record."""
    taint_policy: TaintPolicy = "confirm"
    """What a write or send does after outside content entered the session."""
    grounded: Grounding = "confirm"
    """Whether a value of a write nobody gave is asked about."""
    asked_to_send: Mode = Field("confirm", alias="s1_veto")
    """A turn that asks for something to be sent, and a write that sends nothing: ``confirm``
    asks, ``refuse`` refuses, ``off`` lets it (recorded as ``s1_veto``)."""
    asked_destination: Mode = Field("confirm", alias="s2_veto")
    """A destination the person named that the call does not take (recorded as
    ``s2_veto``)."""
    confirm_read: Mode = "confirm"
    allow: tuple[str, ...] = ()
    """Addresses allowed although private: host names, ``*.suffix`` patterns, IPs or CIDRs."""
    max_tier: int | None = None
    """The highest tool tier a call may use in this session (a plan may lower it)."""
    payment_cap: float | None = None
    """The largest amount one call of a payment tool may carry (a tool's own cap wins)."""
    registry: str = "policy"
    """The key of the :class:`PolicyRegistry` in ``Resources.extra``."""
    ask_expires_in: float | None = None
    """Seconds a person has to answer an ask (``None``: the plugin's default)."""

    @field_validator("checks")
    @classmethod
    def _known(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is None:
            return v
        for name in v:
            if name not in CHECKS and name not in RECORDED.values():
                raise ValueError(f"unknown policy check {name!r}; known: {', '.join(CHECKS)}")
        return tuple(dict.fromkeys(RECORDED.get(name, name) for name in v))

    def on(self, check: str) -> bool:
        """Whether ``check`` runs."""
        listed = self.checks
        return listed is None or check in ALWAYS_ON or RECORDED.get(check, check) in listed
