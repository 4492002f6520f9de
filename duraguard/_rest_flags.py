"""The flags of a result's unread rest, read outside workflow code and bound to the result.

A result too large to note whole (:func:`duraguard._provenance.clipped`) is read in part; if
it is outside content, its unread rest is still read for the flags it carries
(:func:`duraguard._noting.marks_of_rest`: an order to an agent after the first thousand rows).
That takes about a second a megabyte, which in workflow code passed the SDK's 2 s deadlock
limit under load. In a run that started with :data:`duraguard._patches.REST_IN_STEPS` it is
read on the worker: in duraguard's own tool step (sent in
:attr:`duraguard._result_keys.ResultKeys.rest`), or for an adapter's tool by the local activity
:data:`READ_REST_ACTIVITY` (:mod:`duraguard._rest_reader`).

What binds the flags (:func:`rest_basis`): the result's digest, the one its ledger entry
records, and :data:`REST_VERSION`, the version of the reading. Workflow code takes them only
where both match (:func:`rest_taken`), and otherwise reads the rest itself, as before: flags a
worker of another version read (a rolling upgrade, a replay on newer code) are never mixed with
this version's reading. Taking them or not changes no command, so a replay is deterministic
whichever it does.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from ._noting import marks_of_rest
from ._provenance import clipped
from ._types import digest

REST_VERSION = 7
"""The version of the reading of the rest (:func:`marks_of_rest` and every pattern and decoder
it reads with). Raise it with any change to what that reading finds:
``tests/checks/test_orders_in_more_languages.py`` pins its answers on a corpus of orders and
pages, so a change fails there until this is raised."""

READ_REST_ACTIVITY = "duraguard.read-rest"
"""The local activity that reads the rest of a result no duraguard tool step read (an adapter's
tool, a framework's own activity), in a run that started with
:data:`duraguard._patches.REST_IN_STEPS`."""

Flag = Literal["instructs", "to-agent"]
"""A flag outside content carries (:mod:`duraguard._provenance`)."""


class RestFlags(BaseModel):
    """The flags a result carries, its unread rest included, and what they were read from."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    flags: tuple[Flag, ...]
    of: str
    """:func:`rest_basis` of the result they were read from (empty: bound to nothing)."""


class RestRequest(BaseModel):
    """Input of :data:`READ_REST_ACTIVITY` (a local activity: its input is not recorded)."""

    model_config = ConfigDict(frozen=True)

    value: Any
    args: Any = None
    """The call's arguments, as its ledger entry records them, where the result is also to be
    noted as outside content (a labelled tool's: :mod:`duraguard._outside_keys`); else
    ``None``."""
    day: str = ""
    """The day (ISO) the result came, for those notes."""


def rest_basis(result_digest: str) -> str:
    """What binds a result's flags: the reading's version and the result's digest."""
    return f"{REST_VERSION}:{result_digest}"


def made(value: Any, written: bytes | None = None) -> str:
    """``value``'s digest, from its canonical JSON (UTF-8) where the caller has it."""
    return digest(value) if written is None else hashlib.sha256(written).hexdigest()


def rest_read(value: Any, written: bytes | None = None) -> RestFlags | None:
    """The flags ``value`` carries, its unread rest included, bound to it, where it is too large
    to note whole; else ``None`` (nothing is left unread)."""
    if clipped(value)[1]:
        return None
    flags = cast("tuple[Flag, ...]", marks_of_rest(value))  # it gives these two only
    return RestFlags(flags=flags, of=rest_basis(made(value, written)))


def rest_taken(rest: RestFlags | None, entry: Any) -> tuple[str, ...] | None:
    """The flags a step read, where bound to the result ``entry`` (a ledger entry) records and
    read by this version's reading; else ``None`` (the workflow reads the rest itself)."""
    if rest is None or entry is None or not rest.of:
        return None
    return rest.flags if rest.of == rest_basis(str(entry.result_digest)) else None


__all__ = [
    "READ_REST_ACTIVITY",
    "REST_VERSION",
    "Flag",
    "RestFlags",
    "RestRequest",
    "made",
    "rest_basis",
    "rest_read",
    "rest_taken",
]
