"""Where the fault suite's worker stops, and the guardrails it names: shared by the worker
process (which runs them) and the tests (which put their specs in a run's input)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duraguard


class Stops:
    """The point this process stops at (none by default) and the folder of marker files."""

    point: str | None = None
    markers: Path = Path(".")
    only: str = ""
    """Stop only the calls whose key ends with this (``/c2``: each run's second call)."""


def hold(point: str, key: str) -> None:
    """Stop here if this process was started to stop at ``point``: write a marker file named
    after the point and ``key``, then wait until ``release`` appears (or the process dies)."""
    if Stops.point != point or not key.endswith(Stops.only):
        return
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", key)
    (Stops.markers / f"{point}--{name}").write_text(str(os.getpid()))
    while not (Stops.markers / "release").exists():
        time.sleep(0.02)


def _hold_check(subject: duraguard.Subject) -> bool:
    """Stops the check step (when the worker was asked to), then allows."""
    hold("check", f"{subject.context.workflow_id}-{subject.call_id}")
    return True


HOLD = duraguard.guardrail(_hold_check, name="hold", timeout=2.0, replaces=False)
"""Its timeout bounds how long the step may be stopped before the kill: the kill comes within
milliseconds of the marker, and a regular check step's retry waits for its start-to-close
timeout (the guardrails' timeouts + 30 s)."""


def _hold_prompt(subject: duraguard.Subject) -> bool:
    """Stops the first model step while it judges the prompt (when the worker was asked to),
    then allows."""
    hold("prompt", f"{subject.context.workflow_id}")
    return True


HOLD_PROMPT = duraguard.guardrail(
    _hold_prompt,
    name="hold-prompt",
    placements=("pre-prompt",),
    timeout=2.0,
    reads_session=False,
    replaces=False,
)
"""Reads only the prompt, so the first model step judges it itself."""


def _hold_long_check(subject: duraguard.Subject) -> bool:
    """Stops the check step for as long as it is asked to (longer than a workflow task may
    take: the worker then completes the task as a heartbeat, the step still running), then
    allows where the session view it was given was built."""
    hold("check-long", f"{subject.context.workflow_id}-{subject.call_id}")
    return subject.session is not None and not subject.session.withheld


HOLD_LONG = duraguard.guardrail(_hold_long_check, name="hold-long", timeout=60.0, replaces=False)
"""Reads the session (as a custom guardrail does unless told otherwise)."""


class Ask(duraguard.Guardrail):
    """Refunds of 50 or more wait for a person's yes."""

    name = "ask"
    placements = frozenset({"tool-args"})
    replaces = False

    async def check(self, subject: duraguard.Subject) -> duraguard.Verdict:
        if float(subject.value.get("amount", 0)) >= 50:
            return duraguard.Verdict.approve("refunds of 50 or more need a person")
        return duraguard.Verdict.allow()


ASK = Ask()
