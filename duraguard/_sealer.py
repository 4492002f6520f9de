"""A session carried across continue-as-new: sealed under the worker's key
(``duraguard.seal-session``) and opened again, checked, by the next run (``duraguard.open-session``)."""

from __future__ import annotations

import hashlib
import hmac

from temporalio import activity

from ._chain import first_break
from ._types import canonical_json
from ._wire import (
    OPEN_ACTIVITY,
    SEAL_ACTIVITY,
    OpenedSession,
    OpenRequest,
    SealedSession,
    SessionSnapshot,
)
from .errors import MissingSessionKey


class Sealer:
    """Seals and opens carried sessions with the worker's session key."""

    def __init__(self, *, session_key: tuple[str, bytes] | None) -> None:
        self.session_key = session_key

    def _key(self) -> tuple[str, bytes]:
        if self.session_key is None:
            raise MissingSessionKey(
                "carrying a session across continue-as-new needs a session key on the worker: "
                "DuraguardPlugin(session_key=...) or the DURAGUARD_SESSION_KEY variable"
            )
        return self.session_key

    @activity.defn(name=SEAL_ACTIVITY)
    async def seal(self, snapshot: SessionSnapshot) -> SealedSession:
        """The snapshot with a MAC under the worker's session key."""
        key_id, key = self._key()
        body = canonical_json(snapshot.model_dump(mode="json")).encode()
        mac = hmac.new(key, body, hashlib.sha256).hexdigest()
        return SealedSession(snapshot=snapshot, key_id=key_id, mac=mac)

    @activity.defn(name=OPEN_ACTIVITY)
    async def open(self, request: OpenRequest) -> OpenedSession:
        """Whether a carried session is this run's, unaltered, its record unbroken."""
        key_id, key = self._key()
        sealed = request.sealed
        if sealed.key_id != key_id:
            return OpenedSession(
                ok=False, reason=f"sealed under key {sealed.key_id!r}, not {key_id!r}"
            )
        body = canonical_json(sealed.snapshot.model_dump(mode="json")).encode()
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).hexdigest(), sealed.mac):
            return OpenedSession(
                ok=False, reason="the carried session was altered after it was sealed"
            )
        ledger = sealed.snapshot.ledger
        if ledger.session_id != request.workflow_id:
            return OpenedSession(
                ok=False,
                reason=f"the carried session belongs to {ledger.session_id!r}, not {request.workflow_id!r}",
            )
        brk = first_break(ledger.session_id, ledger.entries, ledger.base_hash)
        if brk is not None:
            return OpenedSession(ok=False, reason=f"the session record breaks at entry {brk}")
        return OpenedSession(ok=True)


__all__ = ["Sealer"]
