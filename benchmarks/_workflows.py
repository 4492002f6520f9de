"""Workflows and trivial tools for the overhead benchmark (workflow side is sandbox-safe).

The tools are worker-side and do nothing but echo, so what the benchmark measures is the cost
of Temporal steps and of duraguard's guardrail passes, not of any tool.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from temporalio import workflow

import duraguard
from duraguard._wire import (
    MODEL_ACTIVITY,
    AgentResult,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolInvocation,
    ToolOutput,
)
from duraguard.guardrail import GuardrailSpec
from duraguard.models import Model, model_name
from duraguard.testing import AgentInput
from duraguard.tools import Tool


@duraguard.tool(kind="read")
async def ping(n: int) -> dict[str, Any]:
    """Echo a number back (a trivial read)."""
    return {"n": n}


@duraguard.tool(kind="read")
async def lookup(order_id: str) -> dict[str, Any]:
    """Look up an order (a trivial read with a fixed answer)."""
    return {"order_id": order_id, "status": "shipped", "amount": 20.0}


_WORDS = (
    "account billing card charge credit customer delivery duplicate invoice order parcel "
    "payment refund return shipment status subscription ticket transfer warehouse"
).split()


def _token(seed: str) -> str:
    return hashlib.blake2b(seed.encode(), digest_size=5).hexdigest()


def hits(page: int) -> list[dict[str, Any]]:
    """Ten search hits for ``page``: every id, URL, token and number distinct from every other
    page's, so a session's results keep adding values the provenance index has never seen."""
    out = []
    for k in range(10):
        n = page * 10 + k
        t = [_token(f"{n}/{i}") for i in range(6)]
        words = [_WORDS[(n * 7 + i * 3) % len(_WORDS)] for i in range(6)]
        out.append(
            {
                "id": f"KB-{n:07d}",
                "order_id": f"A{n}",
                "amount": 150.0 if k == 1 else 20.0,
                "title": f"{words[0]} {words[1]} note {t[0]}",
                "url": f"https://kb.example.com/articles/{t[1]}/{n}",
                "snippet": (
                    f"Order A{n} {words[2]} {t[2]} was charged twice; the {words[3]} {t[3]} "
                    f"and {words[4]} {t[4]} show reference {t[5]} ({words[5]})."
                ),
                "score": round(1.0 - k / 20, 3),
            }
        )
    return out


@duraguard.tool(kind="read")
async def search(query: str, page: int) -> dict[str, Any]:
    """Search the knowledge base (ten hits a page, each with values no other page has)."""
    return {"query": query, "page": page, "hits": hits(page)}


@duraguard.tool(kind="write")
async def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order (echoes what it would have done)."""
    return {"order_id": order_id, "refunded": amount, "refund_id": f"R-{order_id}"}


@duraguard.tool(kind="read", labels=("web",))
async def web_feed(rows: int) -> dict[str, Any]:
    """A web feed (outside content) of ``rows`` rows of forty words each, every row naming its
    own address and link: past what is noted whole from 600 rows on."""
    out = []
    for n in range(rows):
        words = " ".join(_WORDS[(n * 7 + i * 3) % len(_WORDS)] for i in range(36))
        out.append(f"Row {n}: {words} mail u{n}@feed.example or see https://feed.example/{n}")
    return {"rows": out}


TOOLS: list[Tool] = [ping, lookup, search, refund, web_feed]

REFUND_EVERY = 10
"""In the search agent's session, every 10th call is a refund of a hit of the search before."""
ASK_EVERY = 100
"""... and the refund at call 50, 150, 250, ... is over 100, so the policy asks a manager."""

SEARCH_RULES = """
rules:
  - name: small refunds are fine
    tool: refund
    when:
      - arg: amount
        lte: 100
    then: allow
  - name: refunds over 100 need a manager
    tool: refund
    when:
      - arg: amount
        gt: 100
    then: ask
    role: manager
"""


def search_call(number: int) -> tuple[str, dict[str, Any]]:
    """The search agent's call ``number`` (1-based): a search, or a refund of a hit the search
    before it returned (hit 1, the 150.0 one, where a manager must say yes)."""
    if number % REFUND_EVERY:
        return "search", {"query": "orders charged twice", "page": number}
    hit = hits(number - 1)[1 if number % ASK_EVERY == ASK_EVERY // 2 else 0]
    return "refund", {"order_id": hit["order_id"], "amount": hit["amount"]}


def asks_in(calls: int) -> int:
    """How many of the first ``calls`` calls ask a manager."""
    return sum(1 for n in range(1, calls + 1) if n % ASK_EVERY == ASK_EVERY // 2)


def lookup_call(number: int) -> tuple[str, dict[str, Any]]:
    """The lookup agent's call ``number``: an order lookup with a fixed, small answer."""
    return "lookup", {"order_id": f"A{number - 1}"}


AGENTS = {"search": search_call, "lookup": lookup_call}


class BenchModel(Model):
    """A scripted model for ``bench:KIND-N``: N calls of the KIND agent (:data:`AGENTS`), one a
    turn, then an answer. A pure function of the turn, so a retry answers the same, and it is
    the same in every process (a worker of its own included)."""

    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        kind, _, n = model_name(request).rpartition("-")
        make, total = AGENTS[kind], int(n)
        turn = request.turn or 0
        if turn >= total:
            return ModelResponse(content=f"went through {total} calls")
        name, args = make(turn + 1)
        return ModelResponse(tool_calls=(ToolCall(id=f"t{turn}", name=name, arguments=args),))


class CallsInput(BaseModel):
    """Input of :class:`GuardedCallsWorkflow`."""

    model_config = ConfigDict(extra="forbid")

    calls: int
    guardrails: list[GuardrailSpec] = Field(default_factory=list)
    check_mode: str | None = None


@workflow.defn(name="duraguard.bench.GuardedCalls")
class GuardedCallsWorkflow:
    """``calls`` guarded calls of ``ping``, one after another, in one session."""

    @workflow.run
    async def run(self, spec: CallsInput) -> int:
        ran = 0
        options = duraguard.CallOptions(mode=spec.check_mode)
        for i in range(spec.calls):
            outcome = await duraguard.guarded_call(
                "ping", {"n": i}, guardrails=spec.guardrails, options=options
            )
            ran += int(outcome.ran)
        return ran


class BeforeCallsInput(BaseModel):
    """Input of :class:`BeforeCallsWorkflow`."""

    model_config = ConfigDict(extra="forbid")

    calls: int
    guardrails: list[GuardrailSpec] = Field(default_factory=list)


@workflow.defn(name="duraguard.bench.BeforeCalls")
class BeforeCallsWorkflow:
    """A hand-written loop handing ``calls`` calls of ``ping`` to ``before_calls`` at once (as
    a turn of a framework's model would): how many may run."""

    @workflow.run
    async def run(self, spec: BeforeCallsInput) -> dict[str, Any]:
        s = duraguard.session()
        gates = await s.before_calls(
            [("ping", {"n": i}, None) for i in range(spec.calls)], guardrails=spec.guardrails
        )
        refused = {(g.verdict.check, g.verdict.reason) for g in gates if not g.runs}
        return {"may_run": sum(1 for g in gates if g.runs), "refused": sorted(refused)}


@workflow.defn(name="duraguard.bench.SearchSession")
class SearchSessionWorkflow:
    """``agent_loop`` as :class:`duraguard.testing.AgentWorkflow` runs it, but in one run (no
    continue-as-new): one history holding every call, for replay."""

    @workflow.run
    async def run(self, spec: AgentInput) -> AgentResult:
        return await duraguard.agent_loop(
            spec.name,
            prompt=spec.prompt,
            model=spec.model,
            tools=spec.tools,
            guardrails=spec.guardrails,
            max_iterations=spec.max_iterations,
            approval_timeout=timedelta(seconds=spec.approval_timeout_seconds),
            check_mode=spec.check_mode,
        )


class HandInput(BaseModel):
    """Input of :class:`HandLoopWorkflow`."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    model: str
    tools: list[str]
    check: Literal["none", "activity", "local"] = "none"
    """Whether each call first goes to the loop's own check step (``bench.check``)."""


class HandCheck(BaseModel):
    """Input of ``bench.check``: one call's tool and arguments."""

    tool: str
    args: dict[str, Any]


@workflow.defn(name="duraguard.bench.HandLoop")
class HandLoopWorkflow:
    """An agent loop written by hand, the way one would without duraguard: the same model step
    (duraguard's, with the conversation in the store) and tool activities, and optionally the
    loop's own check step before each call (``bench.check``, run on the worker)."""

    @workflow.run
    async def run(self, spec: HandInput) -> int:
        info = workflow.info()
        conversation = f"{info.workflow_id}/{info.run_id}"
        pending = [Message(role="user", content=spec.prompt)]
        calls = 0
        for turn in range(100_000):
            response = await workflow.execute_activity(
                MODEL_ACTIVITY,
                ModelRequest(
                    model=spec.model, messages=tuple(pending), tools=tuple(spec.tools),
                    conversation=conversation, step=turn, turn=turn,
                ),
                result_type=ModelResponse,
                start_to_close_timeout=timedelta(seconds=60),
            )  # fmt: skip
            if not response.tool_calls:
                return calls
            pending = [Message(role="assistant", content=None, tool_calls=response.tool_calls)]
            for call in response.tool_calls:
                calls += 1
                allowed = True
                if spec.check != "none":
                    run = (
                        workflow.execute_activity
                        if spec.check == "activity"
                        else workflow.execute_local_activity
                    )
                    allowed = await run(
                        CHECK,
                        HandCheck(tool=call.name, args=call.arguments),
                        result_type=bool,
                        start_to_close_timeout=timedelta(seconds=30),
                    )
                result: Any = {"error": "refused"}
                if allowed:
                    output = await workflow.execute_activity(
                        call.name,
                        ToolInvocation(call_id=f"c{calls}", args=call.arguments),
                        result_type=ToolOutput,
                        start_to_close_timeout=timedelta(seconds=60),
                        activity_id=f"c{calls}",
                    )
                    result = output.result
                content = json.dumps(result, sort_keys=True, separators=(",", ":"))
                pending.append(
                    Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
                )
        return calls


CHECK = "bench.check"
