"""Named presets of the tool-call policy: ``policy(preset="balanced")``.

Each preset sets the modes of the policy's checks; any setting given with it wins. Every check
stays listed (``checks=None``); what differs is how strictly each acts. The figures each preset
measures on the injection corpus are in ``docs/policy.md`` (``python benchmarks/injection.py``).
"""

from __future__ import annotations

from typing import Any, Literal

Preset = Literal["strict", "balanced", "permissive"]

PRESETS: dict[str, dict[str, Any]] = {
    "strict": {
        "infer": False,
        "taint_policy": "refuse",
        "grounded": "confirm",
        "asked_to_send": "refuse",
        "asked_destination": "refuse",
        "confirm_read": "refuse",
    },
    "balanced": {
        "infer": True,
        "taint_policy": "task",
        "grounded": "confirm",
        "asked_to_send": "confirm",
        "asked_destination": "confirm",
        "confirm_read": "confirm",
    },
    "permissive": {
        "infer": True,
        "taint_policy": "off",
        "grounded": "off",
        "asked_to_send": "off",
        "asked_destination": "off",
        "confirm_read": "off",
    },
}
"""What each preset sets.

- ``strict``: unmarked tools are writes; any write or send after outside content is refused
  (the session-wide refusal); the turn checks refuse; grounding asks.
- ``balanced``: kinds inferred; after outside content the values decide
  (``taint_policy="task"``): a write runs where the person's turn asks for that action and
  none of its values was steered by the content; the turn checks and grounding ask.
- ``permissive``: kinds inferred; the turn checks, grounding and the outside content check are
  off. Values that came only from outside content are still refused (labels).

Without a preset, ``policy()`` keeps the defaults of the specification
(``taint_policy="confirm"``): what the person never asked for after outside content is refused,
and every other write or send after it is asked (the session-wide ask, which a preset opts into
with ``taint_policy="confirm"``).

What each does with issue 23's classes (``docs/policy.md``, "Presets"):

- a value laundered through a trusted tool (its call was given outside values): refused in
  every preset where it is a destination or one the person did not point at (labels run in all);
- a write of the person's own values after outside content: ``strict`` refuses, ``balanced``
  and ``permissive`` run it, the default asks;
- a name the person gave that outside content also holds: the person's, in every preset;
- a tiny value (a short id, a small number, a common word) is vouched for only where the
  person states it or a trusted result introduced it in that role, in every preset;
- an action outside content asked for, made of the person's own values: ``strict`` refuses;
  ``balanced`` and the default refuse it where the person never asked for that action and ask
  where they did and content that addresses an AI agent names its values; ``permissive`` lets
  it run;
- a turn that hands the choice of actions to content the person named by name: ``balanced``
  (and ``permissive``) run what that content lists, made of its values, unless content of the
  session addressed an AI agent (then asked); ``strict`` refuses, the default asks.
"""

__all__ = ["PRESETS", "Preset"]
