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
        "s1_veto": "refuse",
        "s2_veto": "refuse",
        "confirm_read": "refuse",
    },
    "balanced": {
        "infer": True,
        "taint_policy": "task",
        "grounded": "confirm",
        "s1_veto": "confirm",
        "s2_veto": "confirm",
        "confirm_read": "confirm",
    },
    "permissive": {
        "infer": True,
        "taint_policy": "off",
        "grounded": "off",
        "s1_veto": "off",
        "s2_veto": "off",
        "confirm_read": "off",
    },
}
"""What each preset sets.

- ``strict``: unmarked tools are writes; any write or send after outside content is refused;
  the turn checks refuse; grounding asks.
- ``balanced``: kinds inferred; after outside content a write runs where the person's turn asks
  for it and no value was steered by the content (``taint_policy="task"``); the turn checks and
  grounding ask.
- ``permissive``: kinds inferred; the turn checks, grounding and the outside content check are
  off. Values that came only from outside content are still refused (labels).

Without a preset, ``policy()`` keeps the defaults of the specification: every write after
outside content is asked.
"""

__all__ = ["PRESETS", "Preset"]
