"""The provenance index as the ledger carries it: per source, its tokens' 64-bit hashes.

Pure and deterministic (it runs inside workflow code); sealed with the ledger across
continue-as-new. :mod:`duraguard._sources` keeps it up to date and answers from it.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import operator
import struct
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SourceIndex(BaseModel):
    """The provenance index as the ledger carries it (across continue-as-new, sealed)."""

    model_config = ConfigDict(extra="forbid")

    sources: list[tuple[str, str]] = Field(default_factory=list)
    """``(source, packed token hashes, base64)``, oldest first."""
    spilled: str = ""
    """The Bloom filter (base64) of tokens of outside content evicted from :attr:`sources`."""
    spilled_tokens: int = 0
    addressed: list[int] = Field(default_factory=list)
    """Calls whose outside content addressed an AI agent (the latest few; ``-1``: a call not
    known), kept apart from the tokens so that eviction never forgets one was seen."""
    pressed: list[int] = Field(default_factory=list)
    """Calls whose outside content pressed an order (``instructs``: those that addressed an
    agent too), kept the same way."""
    unread: bool = False
    """Outside content was read only in part (:func:`duraguard._provenance.clipped`): any value
    the index cannot place may have come from its unread rest (shown as ``outside:unread``)."""
    records: list[str] = Field(default_factory=list)
    """The records of trusted listings kept for sources noted later
    (:func:`duraguard._rows.pack_rows`' form, a text per :data:`~duraguard._rows.MAX_ROWS` rows,
    oldest first), written for continue-as-new only: the run keeps them in memory."""
    listings: list[str] = Field(default_factory=list)
    """The records of the trusted listings that waited unread (no outside content yet), a text
    each, oldest first; written for continue-as-new only, as :attr:`records`."""
    acted: bool = False
    """The person's words acted on something (listings are then read before outside content)."""

    @model_validator(mode="before")
    @classmethod
    def _earlier_form(cls, data: Any) -> Any:
        # Sessions sealed by earlier versions carried {token: [source, ...]}.
        if not isinstance(data, dict) or not data or "sources" in data or "spilled" in data:
            return data
        per: dict[str, list[int]] = {}
        for token, where in data.items():
            for source in where if isinstance(where, list) else ():
                per.setdefault(str(source), []).append(_h(str(token)))
        return {"sources": [(s, _pack(hs)) for s, hs in per.items()]}


@lru_cache(maxsize=65536)
def _h(token: str) -> int:
    """A token's 64-bit hash: keyed by nothing, the same in every process (not ``hash()``)."""
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")


def _pack(hashes: Iterable[int]) -> str:
    hs = list(hashes)
    return base64.b64encode(struct.pack(f"<{len(hs)}Q", *hs)).decode()


def _unpack(packed: str) -> list[int]:
    raw = base64.b64decode(packed)
    return list(struct.unpack(f"<{len(raw) // 8}Q", raw[: len(raw) // 8 * 8]))


def unpack_sorted(packed: str) -> list[int] | None:
    """The hashes ``packed`` holds, or ``None`` where it is not what :func:`_pack` writes of a
    sorted list with each once (not base64, not whole 8-byte hashes, out of order): a worker's
    hashes (:mod:`duraguard._result_keys`) are taken only so."""
    try:
        raw = base64.b64decode(packed, validate=True)
    except ValueError:
        return None
    if len(raw) % 8:
        return None
    hashes = list(struct.unpack(f"<{len(raw) // 8}Q", raw))  # decoded once, here
    if not all(map(operator.lt, hashes, itertools.islice(hashes, 1, None))):
        return None  # not sorted each once (compared in C: no Python frame per hash)
    return hashes
