"""The guard session, the run's public face: one per run, and the seams any agent loop uses.

A :class:`GuardSession` is created once per run (:func:`session`, or implicitly by the first
guarded call), which registers duraguard's handlers on the run (:mod:`duraguard._gate`), and
passed to whatever needs it. What it keeps is :class:`~duraguard._state.SessionState` (the
ledger, the counters, the audit rows, the asks); what it adds are the seams an agent loop
uses: :meth:`~GuardSession.before_call` / :meth:`~GuardSession.before_calls` (a turn's calls
judged, :mod:`duraguard._call`), :meth:`~GuardSession.after_call` (a result judged and the
call recorded, :mod:`duraguard._after`) and :meth:`~GuardSession.judge` (any other value,
:mod:`duraguard._ask`). :func:`guarded_call` is the two around duraguard's own tool activity.

The run's session is found through a weak map keyed by the run's own event loop, never an
attribute hung on the user's object; it goes when the run leaves the worker's cache.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow

from . import _config, _patches
from ._after import after_call
from ._ask import judge
from ._call import before_calls, run_calls
from ._gate import install
from ._ledger import Ledger
from ._outcome import DEFAULT_APPROVAL_TIMEOUT, CallGate, CallOptions, CallOutcome, ProposedCall
from ._state import MAX_RECORD_BYTES as MAX_RECORD_BYTES
from ._state import ROWS_CARRIED as ROWS_CARRIED
from ._state import SessionState
from ._types import PassResult, Placement, SessionView, Subject
from .errors import ConfigurationError, GuardrailHalt
from .guardrail import to_specs


class GuardSession(SessionState):
    """One run's guard state and the seams any agent loop uses. Create it with :func:`session`;
    pass it where it is needed."""

    async def before_call(
        self,
        tool: str,
        args: Any,
        *,
        guardrails: Sequence[Any] = (),
        call_id: str | None = None,
        options: CallOptions | None = None,
    ) -> CallGate:
        """Judge one proposed call (one recorded pass) and settle the verdict: a refusal is
        recorded at once; an ``approve`` parks on a person. See :mod:`duraguard._call`."""
        (gate,) = await self.before_calls(
            [ProposedCall(tool, args, call_id)], guardrails=guardrails, options=options
        )
        return gate

    async def before_calls(
        self,
        calls: Sequence[ProposedCall | tuple[str, Any, str | None]],
        *,
        guardrails: Sequence[Any] = (),
        options: CallOptions | None = None,
    ) -> list[CallGate]:
        """:meth:`before_call` for every call of one model turn, in one recorded pass."""
        proposed = [ProposedCall.of(c) for c in calls]
        return await before_calls(self, proposed, to_specs(guardrails), options or CallOptions())

    async def after_call(
        self,
        gate: CallGate,
        result: Any,
        *,
        guardrails: Sequence[Any] = (),
        ok: bool = True,
        error: str | None = None,
        labels: tuple[str, ...] = (),
        options: CallOptions | None = None,
    ) -> CallOutcome:
        """The tool ran (your framework ran it): judge its result and record the call."""
        return await after_call(
            self, gate, result, to_specs(guardrails), options or CallOptions(),
            ok=ok, error=error, labels=labels,
        )  # fmt: skip

    async def judge(
        self,
        placement: Placement,
        value: Any,
        *,
        guardrails: Sequence[Any] = (),
        tool: str | None = None,
        label: str | None = None,
        agent: str | None = None,
        approval_timeout: timedelta | None = None,
        mode: str | None = None,
    ) -> PassResult:
        """One recorded pass over any value (a prompt, a model's answer, a final answer, an
        outbound URL); an ``approve`` parks on a person and a yes is judged again. A
        ``final-answer`` is judged with the session's last tool results in view (validation)."""
        self.counts.calls += 1
        specs = to_specs(guardrails)
        view: SessionView | None = None
        if any(g.reads_session for g in specs):  # no view built where no guardrail reads one
            view = (
                self.answer_view() if placement == "final-answer" else self.view(tool or "", value)
            )
        subject = Subject(
            placement=placement,
            value=value,
            tool=tool,
            call_id=f"{label or placement}-{self.counts.calls}",
            context=self.context(agent),
            session=view,
        )
        result, _ = await judge(
            self, specs, subject, purpose=placement, label=label,
            approval_timeout=approval_timeout or DEFAULT_APPROVAL_TIMEOUT, mode=mode,
        )  # fmt: skip
        return result


INLINE_BY_DEFAULT = _patches.INLINE_BY_DEFAULT
ANSWER_IN_MODEL_STEP = _patches.ANSWER_IN_MODEL_STEP

_SESSIONS: weakref.WeakKeyDictionary[Any, GuardSession] = weakref.WeakKeyDictionary()
"""One session per run, keyed by the run's own event loop (the SDK runs each workflow run on a
loop of its own); the entry goes when the run leaves the worker's cache."""


def session() -> GuardSession:
    """The running workflow's guard session, created on first use (workflow code only).

    Creating it registers duraguard's handlers on the run: the ``duraguard.decide`` signal and
    update, the ``duraguard.preview-edits`` and ``duraguard.plan`` updates and the
    ``duraguard.pending`` / ``duraguard.verdicts`` queries. An update sent in the same moment
    the run starts (a plan, say) reaches the run before its ``run`` method does: call
    ``duraguard.session()`` in the workflow's ``__init__`` (``@workflow.init``) so the handlers
    exist by then.
    """
    if not workflow.in_workflow():
        raise ConfigurationError(
            "duraguard.session() is for workflow code; outside a workflow, judge values with "
            "duraguard.evaluate(...) and keep a plain duraguard.checks.policy.Session"
        )
    loop = asyncio.get_running_loop()
    found = _SESSIONS.get(loop)
    if found is not None:
        return found
    if not _config.installed():
        # Retried, not failed: the run goes on once a worker with the plugin takes it.
        raise ConfigurationError(
            "duraguard runs in this workflow, but its worker was built without DuraguardPlugin "
            "(no activities, converter or failure types of duraguard's are registered there). "
            "Add it where the worker's client is made: Client.connect(address, "
            "plugins=[duraguard.DuraguardPlugin(...)]) (or Worker(..., plugins=[...]))"
        )
    info = workflow.info()
    created = GuardSession(
        workflow_id=info.workflow_id,
        run_id=info.run_id,
        chain_id=info.first_execution_run_id or info.run_id,
        ledger=Ledger.new(info.workflow_id),
    )
    if workflow.unsafe.is_read_only():
        raise ConfigurationError(
            "duraguard.session() was first called in a query or an update's validator, which "
            "cannot register handlers or record anything; call duraguard.session() in the "
            "workflow's __init__ (@workflow.init) or at the start of its run method"
        )
    install(created)
    # Asked now, before any of duraguard's steps, so that a replay asks in the same task.
    created.features  # noqa: B018
    _SESSIONS[loop] = created
    return created


_current = session
"""The run's session, where a parameter named ``session`` hides :func:`session`."""


async def guarded_call(
    tool: str,
    args: dict[str, Any],
    *,
    guardrails: Sequence[Any] = (),
    call_id: str | None = None,
    options: CallOptions | None = None,
    session: GuardSession | None = None,
) -> CallOutcome:
    """Check one tool call, wait for a person if asked, run it, and check its result.

    A refusal comes back as an outcome with ``ran=False``, its :class:`Refusal` and the shape
    the model reads as ``result``; a ``halt`` raises :class:`GuardrailHalt` (there is no loop to
    end).
    """
    if not isinstance(tool, str) or not tool:
        raise ConfigurationError(f"guarded_call needs a tool name; got {tool!r}")
    if not isinstance(args, dict):
        raise ConfigurationError(
            f"arguments for tool {tool!r} must be a JSON object (a dict); got {type(args).__name__}"
        )
    s = session or _current()
    specs = to_specs(guardrails)
    opts = options or CallOptions()
    ((_, out),) = await run_calls(s, [ProposedCall(tool, args, call_id)], specs, opts)
    if out.halted:
        s.halt(out.verdict.by)
        raise GuardrailHalt(f"halted by guardrail {out.verdict.by!r}", by=out.verdict.by)
    return out
