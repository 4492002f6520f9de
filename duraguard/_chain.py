"""The session record's hash chain: each entry bound to the one before and to the session id.

Pure and tiny, so both the ledger (which writes entries) and the policy's session record check
(which verifies what it is shown) use the same hashing without importing each other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from ._types import LedgerEntry


def _entry_body(entry: LedgerEntry) -> str:
    # Field by field rather than model_dump: the session record check hashes every entry it is
    # shown, on every call, so this is on the hot path.
    return json.dumps(
        [
            entry.index, entry.call_id, entry.tool, entry.args, entry.action, entry.ran, entry.ok,
            entry.at, entry.result_digest, list(entry.labels), entry.compensation_of,
            entry.result_fields, entry.turn, entry.prev_hash,
        ],
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )  # fmt: skip


def chain_hash(prev: str, session_id: str, entry: LedgerEntry) -> str:
    """The hash of ``entry`` chained to ``prev`` within ``session_id``."""
    return hashlib.sha256(f"{prev}|{session_id}|{_entry_body(entry)}".encode()).hexdigest()


def entry_intact(session_id: str, entry: LedgerEntry) -> bool:
    """True where ``entry`` hashes to its own ``entry_hash`` from its ``prev_hash`` in this session."""
    return chain_hash(entry.prev_hash, session_id, entry) == entry.entry_hash


def first_break(session_id: str, entries: Sequence[LedgerEntry], start: str = "") -> int | None:
    """The position of the first entry that does not follow from the one before, or ``None``."""
    prev = start
    first = entries[0].index if entries else 0
    for pos, e in enumerate(entries):
        if e.prev_hash != prev or e.index != first + pos or not entry_intact(session_id, e):
            return pos
        prev = e.entry_hash
    return None
