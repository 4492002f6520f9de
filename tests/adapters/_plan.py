"""The plan the scripted test models follow, read from the prompt they are shown.

A prompt carries ``plan=<JSON> answer=<text>``: the plan is a list of model turns, each a list
of ``[tool, arguments]`` calls made together; after the last turn the model answers ``text``.
Which turn is next depends only on how many calls the conversation already holds, so a model
is a pure function of what it is shown (no network, no state shared between runs).
"""

from __future__ import annotations

import json
import re
from typing import Any

SEEN: dict[str, list[str]] = {}
"""The tool outputs the model was last shown, by workflow id (the models run in an activity on
the worker, in the test's process; replay runs none)."""


def saw(outputs: list[str]) -> None:
    from temporalio import activity

    SEEN[activity.info().workflow_id] = outputs


def plan_of(prompt: str) -> tuple[list[list[tuple[str, dict[str, Any]]]], str]:
    found = re.search(r"plan=(\[.*\]) answer=(.*)$", prompt, re.S)
    if found is None:
        return [], prompt
    turns = json.loads(found.group(1))
    return [[(t, a) for t, a in turn] for turn in turns], found.group(2)


def next_turn(prompt: str, calls_made: int) -> list[tuple[str, dict[str, Any]]] | str:
    """The calls of the next turn, or the answer once every turn of the plan was made.

    A prompt with ``calls=N`` instead of a plan makes N calls, one a turn, the two tools in
    turn (as the unguarded framework workflows' models do, so their histories compare)."""
    many = re.search(r"calls=(\d+)", prompt)
    if "plan=" not in prompt and many is not None:
        if calls_made < int(many.group(1)):
            tool = ("lookup_order", "quote_refund")[calls_made % 2]
            return [(tool, {"order_id": f"A{calls_made}"})]
        return f"done after {calls_made} calls"
    turns, answer = plan_of(prompt)
    made = 0
    for turn in turns:
        if made == calls_made:
            return turn
        made += len(turn)
    return answer


def plan(*turns: list[tuple[str, dict[str, Any]]], answer: str = "done") -> str:
    """The prompt text for a plan."""
    return f"Resolve ticket T1. plan={json.dumps(turns)} answer={answer}"
