"""The tool check's second rule, the session record: the hash chain of the calls so far.

Every call is shown the session's recent entries; each must be intact (its hash links to the one
before and it belongs to this session), in order, and end where the session says it does.
Otherwise the record was altered and nothing more runs in the session. Kept apart from
:mod:`.toolcheck`, which runs it second of its ten rules.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..._chain import entry_intact
from .call import Call, Stop

_VERIFIED: OrderedDict[str, tuple[str, Any]] = OrderedDict()
_VERIFIED_MAX = 8192


def _intact(session_id: str, entry: Any) -> bool:
    """:func:`entry_intact`, remembering entries already verified on this worker.

    Every call of a session is shown the same recent entries again; an entry equal in every
    field (the hash link included) to one verified before is intact without hashing it again.
    """
    seen = _VERIFIED.get(entry.entry_hash)
    fields = entry.__dict__  # every field, compared as plain values (a model's == is slower)
    if seen is not None and seen[0] == session_id and seen[1] == fields:
        return True
    if not entry_intact(session_id, entry):
        return False
    _VERIFIED[entry.entry_hash] = (session_id, dict(fields))
    if len(_VERIFIED) > _VERIFIED_MAX:
        _VERIFIED.popitem(last=False)
    return True


def session_record(call: Call) -> Stop | None:
    """A session whose record does not verify (a broken hash chain) refuses every call."""
    s = call.session
    broken = s.chain_break
    if broken is not None:
        return Stop(
            "session_record",
            f"the session record was altered at call {broken}; nothing more runs in this session",
        )
    if s.calls and not s.entries:
        return Stop(
            "session_record",
            "the session record was not shown with this call, so it cannot be checked",
            partial=True,
        )
    prev = None
    for e in s.entries:
        if e.index >= s.calls or (prev is not None and e.index <= prev.index):
            return Stop(
                "session_record",
                f"the session record is out of order at call {e.index}; nothing more runs",
            )
        if prev is not None and e.index == prev.index + 1 and e.prev_hash != prev.entry_hash:
            return Stop(
                "session_record",
                f"the session record was reordered or spliced at call {e.index}; nothing more runs",
            )
        if not _intact(s.session_id, e):
            return Stop(
                "session_record",
                f"call {e.index} of the session record was edited or comes from another session; nothing more runs",
            )
        prev = e
    if prev is not None and (prev.index != s.calls - 1 or prev.entry_hash != s.chain_head):
        return Stop(
            "session_record",
            "the session record does not end where the session says it does; nothing more runs",
        )
    return None


__all__: list[str] = ["session_record"]
