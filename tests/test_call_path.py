"""One tool call, followed through the code: no duraguard module is entered twice on one stack.

The layer test (tests/test_layers.py) reads imports, so a module can only call down the layer
order by name. A callback can still come back up: a module handing a function or an object to
one below it, which then calls into the first again (``_ledger`` -> ``_sources`` -> the ledger's
own method). This test watches the calls themselves. It runs one allowed call through
``agent_loop`` (a model step, the call's checks, its tool, the final answer) with every
workflow-side and worker-side thread profiled, and at each call of a duraguard function reads
the stack of duraguard modules under it (consecutive frames of one module counted once,
frames of other packages, the SDK and pydantic, left out). A module that appears twice on one
stack, with another module between, fails the test, naming the stack.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

from duraguard import pii, schema
from duraguard.checks import policy
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import TOOL_LOG, make_harness

ROOT = str(Path(__file__).resolve().parent.parent / "duraguard") + "/"


def _module(code: CodeType, names: dict[str, str | None] = {}) -> str | None:  # noqa: B006
    """``duraguard.x.y`` for a function of duraguard's own, else ``None`` (memoised by file)."""
    file = code.co_filename
    if file not in names:
        if file.startswith(ROOT) and file.endswith(".py"):
            rel = file[len(ROOT) : -3].replace("/", ".").removesuffix(".__init__")
            names[file] = "duraguard" if rel == "__init__" else f"duraguard.{rel}"
        else:
            names[file] = None
    return names[file]


class Stacks:
    """A profile function: the stacks of duraguard modules seen, and those that come back."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, ...]] = Counter()
        self.back: Counter[tuple[str, ...]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or _module(frame.f_code) is None:
            return
        chain: list[str] = []
        named: list[str] = []
        f: FrameType | None = frame
        while f is not None:
            m = _module(f.f_code)
            if m is not None and (not chain or chain[-1] != m):
                chain.append(m)
                named.append(f"{m}.{f.f_code.co_qualname}")
            elif m is not None:
                named[-1] = f"{m}.{f.f_code.co_qualname}"  # the segment's entry: its outermost
            f = f.f_back
        stack = tuple(reversed(chain))  # outermost first
        with self._lock:
            self.seen[stack] += 1
            if len(set(stack)) != len(stack):
                self.back[tuple(reversed(named))] += 1


RULES = """
rules:
  - {name: nothing is refunded, tool: refund, then: refuse}
  - {name: the rest may run, tool: "*", then: allow}
"""

SCENARIOS = {
    # an allowed read: the model step, the call judged inside its tool's step, the answer
    "allowed": (("lookup", {"order_id": "A1"}), "lookup", ()),
    # a send whose body pii masks before the tool runs
    "masked": (
        ("send_email", {"to": "ana@example.com", "body": "card 4111 1111 1111 1111"}),
        "send_email",
        (),
    ),
    # a write the policy refuses (the sheet allows nothing): the model reads why
    "refused": (("refund", {"order_id": "A1", "amount": 20.0}), None, ("refund",)),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_one_call_enters_each_duraguard_module_once_on_each_stack(
    temporal_env: Any, scenario: str
) -> None:
    call, ran, refused = SCENARIOS[scenario]
    h = await make_harness(temporal_env, rules=RULES)
    h.workflows = [AgentWorkflow]
    model = h.script(calls(call), answer("Done."))
    run_input = AgentInput(
        prompt="What is order A1? Mail ana@example.com about it.", model=model,
        tools=[call[0]], guardrails=[schema(), pii(), policy()],
    )  # fmt: skip
    TOOL_LOG.clear()
    stacks = Stacks()
    # The collector stays off while traced: it finalises garbage inside whatever frame runs when
    # it starts, so a workflow coroutine an earlier eviction left (a loaded machine evicts) was
    # seen closing inside canonical_json, as if that called the workflow.
    gc.collect()
    gc.disable()
    # Threads the worker starts from here on (the workflow's, the tools') are profiled too.
    threading.setprofile(stacks)
    sys.setprofile(stacks)
    try:
        run = await h.run(AgentWorkflow.run, run_input)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        gc.enable()
    assert run.result.stop_reason == "done"
    assert [t for t, _ in TOOL_LOG] == ([ran] if ran else [])
    assert [v.tool for v in run.result.verdicts if v.action == "deny"] == list(refused)
    masked = [
        v.tool for v in run.result.verdicts if (v.action, v.placement) == ("mask", "tool-args")
    ]
    assert masked == (["send_email"] if scenario == "masked" else [])
    assert "4111 1111" not in repr(TOOL_LOG)  # the tool ran with the body masked
    # The trace saw both sides: the loop in workflow code, the checks and the tool in the worker.
    modules = {m for stack in stacks.seen for m in stack}
    for side in (
        "duraguard._loop",
        "duraguard._checker",
        "duraguard.checks.pii",
        "duraguard.engine",
    ):
        assert side in modules, f"{side} never ran: the trace missed a side"
    assert not stacks.back, "a module entered twice on one stack:\n" + "\n".join(
        " -> ".join(cycle) for cycle in sorted({_cycle(stack) for stack in stacks.back})
    )


def _cycle(stack: tuple[str, ...]) -> tuple[str, ...]:
    """The part of a stack that comes back: from a module's first function to its next."""
    modules = [name.rsplit(".", 1)[0] if "." in name else name for name in stack]
    mods = [_owner(n) for n in stack]
    for i, m in enumerate(mods):
        if m in mods[i + 1 :]:
            j = mods.index(m, i + 1)
            return stack[i : j + 1]
    return tuple(modules)


def _owner(qualified: str) -> str:
    """``duraguard._state`` for ``duraguard._state.SessionState.config``."""
    parts = qualified.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in _MODULES:
            return ".".join(parts[:n])
    return qualified


_MODULES = {
    ("duraguard." + str(p.relative_to(ROOT).with_suffix("")).replace("/", ".")).removesuffix(
        ".__init__"
    )
    for p in Path(ROOT).rglob("*.py")
} | {"duraguard"}
