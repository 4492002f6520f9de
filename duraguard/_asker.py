"""Recording an ask (``duraguard.ask``): its challenge drawn, and the keys whose yes counts."""

from __future__ import annotations

import base64
import secrets

from temporalio import activity

from ._approvers import fingerprint
from ._wire import ASK_ACTIVITY, PendingAsk
from .approvals import ApproverKeys

MAX_ASK_KEYS = 64
"""Approvers' keys recorded with one ask; with more people whose yes counts, their fingerprints
are recorded instead (about 19 bytes each, :attr:`PendingAsk.prints`), ..."""
MAX_ASK_PRINTS = 16_384
"""... up to this many (about 300 KB); past it the ask records neither, and the worker's check
decides every decision (each one a step, at most ``MAX_CHECKS_PER_ASK`` an ask)."""


class Asker:
    """Draws each ask's challenge and names who may answer it."""

    def __init__(self, *, approvers: ApproverKeys | None, accept_unsigned: bool) -> None:
        self.approvers = approvers
        self.accept_unsigned = accept_unsigned

    @activity.defn(name=ASK_ACTIVITY)
    async def ask(self, asked: PendingAsk) -> PendingAsk:
        """Record an ask, draw its challenge (a decision must sign it, so it answers this ask of
        this run and nothing else) and name the keys whose yes can count for it."""
        who = sorted(
            (a.name, a.public_key)
            for a in (self.approvers or ())
            if asked.role is None or asked.role in a.roles
        )
        keys: dict[str, str] = {}
        prints: tuple[str, ...] = ()
        if len(who) <= MAX_ASK_KEYS:
            keys = {name: base64.b64encode(key).decode() for name, key in who}
        elif len(who) <= MAX_ASK_PRINTS:
            prints = tuple(sorted(fingerprint(name, key) for name, key in who))
        return asked.model_copy(
            update={
                "challenge": secrets.token_urlsafe(18),
                "keys": keys,
                "prints": prints,
                "unsigned_ok": self.accept_unsigned,
            }
        )


__all__ = ["MAX_ASK_KEYS", "MAX_ASK_PRINTS", "Asker"]
