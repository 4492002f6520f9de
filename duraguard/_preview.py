"""Edits previewed before anyone signs: the ``duraguard.preview-edits`` update.

A person about to approve a parked call with edits asks how the guardrails judge the edited
call; the answer comes from a recorded pass that decides nothing and holds nothing (an
``approve`` does not end it, so a later refusal shows). Refused without history: a malformed
request, a call not waiting, oversized edits, too many previews for one ask.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ._bounds import too_deep
from ._state import Asks
from ._types import NotJSON, canonical_json
from ._wire import EditsPreview, EditsPreviewRequest
from .approvals import MAX_EDITS_BYTES

MAX_PREVIEWS_PER_ASK = 16
"""Edit previews judged (one recorded step each) per ask."""


class PreviewDesk:
    """Answers a session's edit previews."""

    def __init__(self, asks: Asks) -> None:
        self.asks = asks

    def problem(self, args: tuple[Any, ...]) -> tuple[EditsPreviewRequest | None, str | None]:
        if len(args) != 1:
            return None, "a preview is one object: {call_id, edits}"
        try:
            req = EditsPreviewRequest.model_validate(args[0])
            deep = too_deep(req.edits, "edits")
            if deep is not None:
                return None, deep
            size = len(canonical_json(req.edits).encode())
        except (ValidationError, NotJSON) as err:
            return None, f"malformed preview request: {str(err)[:200]}"
        if size > MAX_EDITS_BYTES:
            return None, f"edits are {size} bytes; at most {MAX_EDITS_BYTES} are accepted"
        parked = self.asks.parked.get(req.call_id)
        if parked is None or parked.decided:
            return None, f"no call {req.call_id!r} is waiting for a person here"
        if parked.judge_edits is None or not isinstance(parked.ask.args, dict):
            return None, f"call {req.call_id!r} takes no edits"
        if parked.previews >= MAX_PREVIEWS_PER_ASK:
            return None, f"{MAX_PREVIEWS_PER_ASK} previews were already judged for this ask"
        return req, None

    def validate(self, *args: Any) -> None:
        _, problem = self.problem(args)
        if problem is not None:
            raise ValueError(problem)

    async def on_preview(self, *args: Any) -> EditsPreview:
        req, problem = self.problem(args)
        if req is None:
            return EditsPreview(ok=False, action="deny", reason=problem)
        parked = self.asks.parked[req.call_id]
        parked.previews += 1
        judge = parked.judge_edits
        if judge is None:  # checked by problem(); kept for the type checker
            return EditsPreview(ok=False, action="deny", reason="this call takes no edits")
        r = await judge({**parked.ask.args, **req.edits})
        v = r.verdict
        return EditsPreview(
            ok=v.action not in ("deny", "halt"), action=v.action, by=v.by, check=v.check,
            reason=v.reason,
        )  # fmt: skip
