"""A trusted result's provenance keys, worked out in the tool's own step and recorded with it.

Noting a tool result reads every value in it (:func:`duraguard._noting.trusted_keys`) and
hashes each key: for a search result of ten hits, about 390 keys and two milliseconds of
workflow code a call, paid again by every replay of the history (most of a 1,000-call search
session's replay). duraguard's own tool step works them out beside the result, in the
activity, and returns their hashes with it (:attr:`duraguard._wire.ToolOutput.noted`); the
workflow takes them where they were worked out on exactly what it would have read itself, and
a replay reads them back from history instead of reading the result again.

What binds them (:func:`basis`): the version of the reading (:data:`KEYS_VERSION`), the tool,
the day the result came (dates named by a weekday are read by it), the call's arguments (a
result never vouches for its own call's values) and the result's digest, the one its ledger
entry records. Where any of these differ (another version of duraguard made them, the step's
day is not the entry's, the model reads another value than the step returned: a refusal, a
replacement) the workflow reads the result itself, as it does for a result no duraguard step
made (an adapter's tool). Outside content (a labelled tool, a call given values from outside
content) is always read in the workflow: whether a result is outside content is known only
there. The hashes claim no more trust than the step's own verdicts on the call, which the
workflow takes from the same output. The digest is of the result's canonical JSON (keys
sorted), while a result past the bounds is read in its own order: Temporal's JSON converter
keeps that order, from the step to the workflow.

A result too large to note whole also carries the flags of its unread rest where they were
read beside it (:attr:`ResultKeys.rest`, :mod:`duraguard._rest_flags`), bound apart.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._derived import MAX_PER_SOURCE, numbers_in
from ._noting import trusted_keys
from ._outside_keys import OutsideKeys, outside_if_long
from ._provenance import MAX_TOKENS_PER_SOURCE, clipped
from ._rest_flags import RestFlags, made, rest_read
from ._rows import hashed, pack_rows, rows_of
from ._sourceindex import _h, _pack, unpack_sorted
from ._types import canonical_json

KEYS_VERSION = 1
"""The version of what a trusted result is noted under (:func:`trusted_keys`, the hash
:func:`duraguard._sourceindex._h`, the numbers :func:`numbers_in` finds). Raise it with any
change to any of them: keys another version made are then read again in the workflow, never
mixed with these (``tests/test_result_keys.py`` pins the keys of one result, so a change to the
reading fails there until this is raised)."""


class ResultKeys(BaseModel):
    """A trusted result's keys as its step worked them out, and what they were worked out on."""

    # A field a later version adds is ignored here: what they claim is checked by their basis,
    # and a version whose reading differs has another KEYS_VERSION.
    model_config = ConfigDict(extra="ignore", frozen=True)

    basis: str
    """:func:`basis` of what they were read from."""
    hashes: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The keys' hashes, sorted, each once, at most :data:`MAX_TOKENS_PER_SOURCE` (packed as
    :class:`~duraguard._sourceindex.SourceIndex` packs them); ``None`` for a labelled tool's
    result, which is outside content (only :attr:`rest` is sent)."""
    numbers: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The numbers the part of the result that is noted holds (:func:`numbers_in`: those in
    prose, then those in fields), each as ``repr`` writes a float, comma-separated; ``None``
    where the step did not send them (a worker of an earlier version): the workflow then reads
    them from the result itself."""
    rest: RestFlags | None = Field(default=None, exclude_if=lambda v: v is None)
    """The flags the result carries, its unread rest included, where the step was asked to read
    it (:attr:`duraguard._wire.ToolInvocation.rest`; a labelled tool's result, always) and the
    result is too large to note whole, bound to the result (:mod:`duraguard._rest_flags`);
    ``None`` otherwise (the workflow reads the rest itself where the result is outside
    content)."""
    outside: OutsideKeys | None = Field(default=None, exclude_if=lambda v: v is None)
    """A result of at least :data:`~duraguard._outside_keys.NOTED_ON_THE_WORKER` characters,
    noted as outside content on the worker (:mod:`duraguard._outside_keys`): a labelled tool's,
    and once outside content has entered the session any other's (taken where its call was given
    values from that content); ``None`` otherwise (the workflow notes it itself)."""

    rows: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """Once outside content has entered the session (:attr:`rest` asked), the result's records
    as the index links them (:mod:`duraguard._rows`, :func:`~duraguard._rows.pack_rows`);
    ``None`` otherwise, or from a worker of an earlier version (the workflow reads them itself
    where it needs them)."""

    def unpacked(self) -> list[int] | None:
        """The hashes, or ``None`` where :attr:`hashes` is not what a step packs (not base64,
        not whole 8-byte hashes, not sorted each once, or not sent)."""
        return None if self.hashes is None else unpack_sorted(self.hashes)

    def unpacked_numbers(self) -> list[float] | None:
        """The numbers, or ``None`` where :attr:`numbers` was not sent or is not what a step
        writes (a text that is no float, more than :func:`numbers_in` finds)."""
        if self.numbers is None:
            return None
        if not self.numbers:
            return []
        parts = self.numbers.split(",", 2 * MAX_PER_SOURCE)
        if len(parts) > 2 * MAX_PER_SOURCE:
            return None
        try:
            return [float(x) for x in parts]
        except ValueError:
            return None


def basis(tool: str, day: str, args: Any, result_digest: str | None) -> str:
    """What a result's keys depend on, as one digest: the reading's version and the Unicode
    data it folds text by (NFKC, case folding: they change with Python's version), the tool,
    the day the result came, the call's arguments and the result's digest."""
    version = [KEYS_VERSION, unicodedata.unidata_version]
    text = canonical_json([version, tool, day, args, result_digest])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def result_keys(
    value: Any, args: Any, tool: str, day: str, written: bytes | None = None, *, rest: bool = False
) -> ResultKeys:
    """The keys the workflow would note ``value`` under, as a trusted result of ``tool`` called
    with ``args`` on ``day`` (ISO): the part of it noted (:func:`clipped`) read as
    :meth:`duraguard._sources.Sources._note` reads it; with ``rest``, where it is too large to
    note whole, the flags it carries too (:func:`duraguard._rest_flags.rest_read`), and where it
    is long, its notes as outside content (:mod:`duraguard._outside_keys`). ``written``: ``value``'s canonical JSON (UTF-8) where the caller has it, so it is not
    written again for its digest."""
    kept, _ = clipped(value)
    hashes = sorted(set(map(_h, trusted_keys(kept, args, tool, day))))
    numbers = [x for found in numbers_in(kept) for x in found]
    read = rest_read(value, written) if rest else None
    # Once outside content has entered the session (``rest``), a long result may be noted as
    # outside content instead: where its call was given values from that content.
    outside = None
    if rest:
        size = len(written or canonical_json(value))
        outside = outside_if_long(value, args, day, read, size, written)
    return ResultKeys(
        basis=basis(tool, day, args, made(value, written)),
        hashes=_pack(hashes[:MAX_TOKENS_PER_SOURCE]),
        numbers=",".join(map(repr, numbers)),
        rest=read,
        outside=outside,
        rows=pack_rows(hashed(rows_of(value, tool))) if rest else None,
    )


def taken(
    keys: ResultKeys | None, entry: Any, day: str
) -> tuple[list[int], list[float] | None] | None:
    """The hashes of ``keys`` and their numbers (``None`` where the step sent none that can be
    read) where they were worked out on what ``entry`` (a ledger entry) records of its call, on
    ``day``; else ``None`` (the workflow reads the result itself)."""
    if keys is None or entry is None or keys.hashes is None:
        return None
    try:
        expected = basis(str(entry.tool), day, entry.args, entry.result_digest)
    except (TypeError, ValueError):
        return None
    if keys.basis != expected:
        return None
    hashes = keys.unpacked()
    return None if hashes is None else (hashes, keys.unpacked_numbers())


__all__ = ["KEYS_VERSION", "ResultKeys", "basis", "result_keys", "taken"]
