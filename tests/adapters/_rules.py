"""A guardrail for the adapter tests whose verdict is spelled in the value it judges.

Each placement reads its own markers, so a prompt that carries a plan of tool calls (as the
scripted models read it) is never mistaken for one of the calls in it:

* tool arguments: ``DENY`` refuses, ``HALT`` halts, ``ASK`` asks a person, a card number
  ``4111 1111 1111 1111`` is masked to ``[card]``;
* a tool's result: ``internal-note`` is masked to ``[note]``;
* the prompt: ``forbidden`` refuses, ``halt-now`` halts, ``ask-first`` asks, ``secret-123`` is
  masked to ``[secret]``;
* the final answer: ``leak`` refuses, ``stop-here`` halts, ``4111 1111 1111 1111`` is masked.
"""

from __future__ import annotations

import json
from typing import Any

from duraguard import Guardrail, Subject, Verdict

CARD = "4111 1111 1111 1111"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _replace(value: Any, old: str, new: str) -> Any:
    return (
        json.loads(json.dumps(value).replace(old, new))
        if not isinstance(value, str)
        else (value.replace(old, new))
    )


class Rules(Guardrail):
    name = "rules"
    placements = frozenset({"pre-prompt", "tool-args", "tool-result", "final-answer"})
    reads_session = False

    def __init__(self) -> None:
        self.calls = 0

    async def check(self, subject: Subject) -> Verdict:
        self.calls += 1
        text = _text(subject.value)
        table = {
            "tool-args": (("DENY", "deny"), ("HALT", "halt"), ("ASK", "approve"), (CARD, "mask")),
            "tool-result": (("internal-note", "mask"),),
            "pre-prompt": (
                ("forbidden", "deny"), ("halt-now", "halt"), ("ask-first", "approve"),
                ("secret-123", "mask"),
            ),
            "final-answer": (("leak", "deny"), ("stop-here", "halt"), (CARD, "mask")),
        }.get(subject.placement, ())  # fmt: skip
        for marker, action in table:
            if marker not in text:
                continue
            why = f"{subject.placement} carries {marker}"
            if action == "deny":
                return Verdict.deny(why)
            if action == "halt":
                return Verdict.halt(why)
            if action == "approve":
                return Verdict.approve(why)
            shown = {"internal-note": "[note]", CARD: "[card]", "secret-123": "[secret]"}[marker]
            return Verdict(
                action="mask", reason=why, payload=_replace(subject.value, marker, shown)
            )
        return Verdict.allow()
