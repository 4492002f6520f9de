"""The inbox's state: what waits now, what stopped waiting and why, and the moves a person
makes on an ask (preview edits, get the statement to sign, send the signed decision).

One poller keeps a snapshot fresh while someone watches (an open page or event stream) and
numbers its versions, so a page learns of a change without reloading. An ask that stops being
listed is looked up in its run's history once, and kept for a while with why it stopped:
approved or denied by whom, expired, or the run ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from .._types import canonical_json, digest
from .._updates import abort_message, aborted, send_update
from .._wire import (
    DECIDE,
    PREVIEW_EDITS,
    VERDICTS_QUERY,
    AuditRow,
    EditsPreview,
    EditsPreviewRequest,
)
from ..approvals import ApprovalCheck, Decision, DecisionKind, decision_for, send_decision
from ..audit import audit_rows
from ._source import Ending, Reader, Waiting

PREVIEW_SECONDS = 600.0
"""How long an edit preview stands for the statement built on it."""


class InboxError(Exception):
    """A move the inbox could not make; the message says why and the fix.

    Attributes:
        status: the HTTP status the API answers with.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Closed:
    """An ask that stopped waiting, and how."""

    waiting: Waiting
    ending: Ending


@dataclass(frozen=True)
class Snapshot:
    """What waits, newest first, at one moment."""

    version: int
    asks: tuple[Waiting, ...]
    closed: tuple[Closed, ...]
    problems: tuple[str, ...]
    taken_at: float


class Inbox:
    """What waits for a person across workflows, kept fresh while someone watches.

    Args:
        client: connected with the workers' data converter (the codec included).
        poll: seconds between refreshes while someone watches.
        query_timeout: seconds to wait for a worker to answer a query.
        update_timeout: seconds to wait for a worker to answer a decision or a preview.
        keep_closed: how many recently closed asks are shown.
    """

    def __init__(
        self,
        client: Client,
        *,
        poll: float = 1.0,
        query_timeout: float = 2.0,
        update_timeout: float = 30.0,
        keep_closed: int = 50,
    ) -> None:
        self.client = client
        self.poll = poll
        self.update_timeout = update_timeout
        self.reader = Reader(client, query_timeout=query_timeout)
        self.snapshot = Snapshot(0, (), (), (), 0.0)
        self._closed: deque[Closed] = deque(maxlen=keep_closed)
        self._lock = asyncio.Lock()
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        self._watchers = 0
        self._previews: dict[tuple[Any, ...], tuple[EditsPreview, float]] = {}

    # -- the list ---------------------------------------------------------------------
    async def refresh(self) -> Snapshot:
        """Read what waits now; a new version if anything was added or closed."""
        async with self._lock:
            before = self.snapshot
            try:
                asks, unread = await self.reader.scan()
            except Exception as e:
                problem = f"cannot list waiting runs: {type(e).__name__}: {e}"[:300]
                self.snapshot = Snapshot(
                    before.version, before.asks, before.closed, (problem,), time.time()
                )
                return self.snapshot
            now = time.time()
            live = [w for w in asks if w.ask.expires_at > now]
            kept = [w for w in before.asks if w.ask.workflow_id in unread]  # unread: keep them
            current = {w.key: w for w in [*kept, *live]}
            for w in before.asks:
                if w.key not in current:
                    self._closed.appendleft(Closed(w, await self.reader.ending(w)))
            ordered = sorted(current.values(), key=lambda w: w.asked_at, reverse=True)
            changed = [w.key for w in ordered] != [w.key for w in before.asks] or len(
                self._closed
            ) != len(before.closed)
            self.snapshot = Snapshot(
                before.version + 1 if changed else before.version,
                tuple(ordered),
                tuple(self._closed),
                tuple(f"{wid}: {why}" for wid, why in unread.items()),
                now,
            )
        if changed:
            async with self._changed:
                self._changed.notify_all()
        return self.snapshot

    async def fresh(self, max_age: float = 1.0) -> Snapshot:
        """The snapshot, refreshed first if it is older than ``max_age`` seconds."""
        if time.time() - self.snapshot.taken_at > max_age:
            return await self.refresh()
        return self.snapshot

    async def changed_since(self, version: int, timeout: float) -> Snapshot:
        """The snapshot once its version passes ``version``, or after ``timeout`` seconds."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.snapshot.version > version), timeout
                )
        return self.snapshot

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """While held, the poller keeps the snapshot fresh."""
        self._watchers += 1
        self._wake.set()
        try:
            yield
        finally:
            self._watchers -= 1

    def nudge(self) -> None:
        """Refresh soon (after a decision)."""
        self._wake.set()

    async def run(self) -> None:
        """Poll while someone watches; sleep otherwise. Runs until cancelled."""
        while True:
            if self._watchers <= 0:
                self._wake.clear()
                await self._wake.wait()
            with contextlib.suppress(Exception):  # a failed scan is kept in problems
                await self.refresh()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll)

    # -- one ask ------------------------------------------------------------------------
    async def find(self, workflow_id: str, call_id: str) -> Waiting:
        """The ask ``call_id`` of ``workflow_id`` as it waits now (read afresh).

        Raises:
            InboxError: nothing of that name waits (404).
        """
        try:
            asks = await self.reader.asks_of(workflow_id)
        except Exception as e:
            raise InboxError(f"cannot read {workflow_id!r}: {str(e)[:200]}", 404) from None
        now = time.time()
        for w in asks:
            if w.ask.call_id == call_id and w.ask.expires_at > now:
                return w
        waiting = ", ".join(w.ask.call_id for w in asks) or "none"
        raise InboxError(
            f"call {call_id!r} is not waiting on {workflow_id!r} (waiting: {waiting})", 404
        )

    async def verdicts(self, w: Waiting) -> list[AuditRow]:
        """The run's verdicts so far: from its worker, else from its history."""
        handle = self.client.get_workflow_handle(w.ask.workflow_id, run_id=w.ask.run_id or None)
        if w.source == "query":
            with contextlib.suppress(Exception):
                rows = await handle.query(
                    VERDICTS_QUERY,
                    result_type=list[AuditRow],
                    rpc_timeout=timedelta(seconds=self.reader.query_timeout),
                )
                return list(rows)
        return await audit_rows(handle, self.client.data_converter)

    async def preview(self, w: Waiting, edits: dict[str, Any]) -> EditsPreview:
        """How the guardrails judge the call with ``edits`` (the ``duraguard.preview-edits``
        update: a recorded pass that decides nothing)."""
        from temporalio.client import WorkflowUpdateFailedError

        handle = self.client.get_workflow_handle(w.ask.workflow_id, run_id=w.ask.run_id or None)
        try:
            result: EditsPreview = await send_update(
                handle,
                PREVIEW_EDITS,
                EditsPreviewRequest(call_id=w.ask.call_id, edits=edits),
                result_type=EditsPreview,
                rpc_timeout=timedelta(seconds=self.update_timeout),
            )
        except WorkflowUpdateFailedError as e:
            result = EditsPreview(ok=False, action="deny", reason=_cause(e))
        except Exception as e:
            raise _unanswered(e, w, self.update_timeout) from None
        self._previews[(*w.key, digest(edits))] = (result, time.monotonic())
        if len(self._previews) > 1000:
            self._previews.pop(next(iter(self._previews)))
        return result

    def previewed(self, w: Waiting, edits: dict[str, Any]) -> EditsPreview | None:
        """The preview of exactly these edits on this ask, if one stands."""
        found = self._previews.get((*w.key, digest(edits)))
        if found is None or time.monotonic() - found[1] > PREVIEW_SECONDS:
            return None
        return found[0]

    def unsigned(
        self,
        w: Waiting,
        *,
        decision: DecisionKind,
        approver: str,
        edits: dict[str, Any] | None,
        reason: str | None,
        ttl_seconds: float,
    ) -> Decision:
        """The decision a person is about to sign, bound to this ask (no key here).

        Raises:
            InboxError: edits that were not previewed, or that the guardrails refuse.
        """
        if edits:
            preview = self.previewed(w, edits)
            if preview is None:
                raise InboxError("check these edits first (preview), then sign", 409)
            if not preview.ok:
                raise InboxError(
                    f"the guardrails refuse these edits ({preview.by or '-'}): "
                    f"{preview.reason or preview.action}; a yes with them would fail the run",
                    409,
                )
        # Whole seconds: the page reads expires_at back as a JS number; any float survives
        # that round trip, but a whole number is also the same text in both languages.
        return decision_for(
            w.ask,
            approver=approver,
            decision=decision,
            edits=edits or None,
            reason=reason or None,
            ttl_seconds=float(int(ttl_seconds)),
            now=float(int(time.time())),
        )

    async def decide(
        self, w: Waiting, decision: Decision, *, signal: bool = False
    ) -> ApprovalCheck:
        """Send a signed decision; the worker's answer (by signal: sent, checked later)."""
        from temporalio.client import WorkflowUpdateFailedError

        if decision.signature is None:
            raise InboxError("the decision is not signed; sign its statement with your key")
        ask = w.ask
        bound = (decision.workflow_id, decision.run_id, decision.call_id, decision.challenge)
        if bound != (ask.workflow_id, ask.run_id, ask.call_id, ask.challenge):
            raise InboxError(
                "this decision answers another ask than the one waiting now; decide it again", 409
            )
        if decision.call_digest != ask.call_digest:
            raise InboxError("this decision was made for other arguments than the call parked", 409)
        if decision.edits:
            canonical_json(decision.edits)  # the model validated it; plain JSON either way
        handle = self.client.get_workflow_handle(ask.workflow_id, run_id=ask.run_id or None)
        try:
            if signal:
                await handle.signal(DECIDE, decision)
                self.nudge()
                return ApprovalCheck(
                    ok=True,
                    reason="sent by signal; the workflow checks it in a recorded step",
                    approver=decision.approver,
                    call_id=ask.call_id,
                    decision=decision.decision,
                )
            check = await send_decision(
                handle, decision, rpc_timeout=timedelta(seconds=self.update_timeout)
            )
        except WorkflowUpdateFailedError as e:
            return ApprovalCheck(ok=False, reason=_cause(e), call_id=ask.call_id)
        except Exception as e:
            raise _unanswered(e, w, self.update_timeout) from None
        self.nudge()
        return check


def _cause(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    return str(getattr(cause, "message", None) or cause or e)[:500]


def _unanswered(e: BaseException, w: Waiting, timeout: float) -> InboxError:
    from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
    from temporalio.service import RPCError, RPCStatusCode

    wid = w.ask.workflow_id
    if aborted(e):
        return InboxError(f"{wid}: {abort_message('the decision')}", 503)
    if isinstance(e, WorkflowUpdateRPCTimeoutOrCancelledError) or (
        isinstance(e, RPCError) and e.status == RPCStatusCode.DEADLINE_EXCEEDED
    ):
        return InboxError(
            f"{wid}: no worker answered within {timeout:g}s; is a worker running for its task "
            "queue? (a decision can also be sent by signal: it waits for the worker)",
            504,
        )
    if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
        return InboxError(f"{wid}: the run is gone ({e.message})", 404)
    return InboxError(f"{wid}: {type(e).__name__}: {str(e)[:300]}", 502)
