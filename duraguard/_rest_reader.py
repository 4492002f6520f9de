"""The local activity that reads the unread rest of a result no duraguard tool step read.

An adapter's tool (a framework's own activity, an MCP server's) returns its result to workflow
code directly. Where that result is too large to note whole and may be read as outside content,
its unread rest is still read for the flags it carries (:func:`duraguard._noting.marks_of_rest`):
about a second a megabyte, which in workflow code passed the SDK's 2 s deadlock limit under load
(and a task the SDK interrupts there can leave a framework's run unevictable on its worker).
This step reads it on the worker instead, in a thread, and its answer is recorded in the local
activity's marker: a replay reads it back.
"""

from __future__ import annotations

import asyncio

from temporalio import activity

from ._outside_keys import RestRead, outside_keys
from ._rest_flags import READ_REST_ACTIVITY, RestRequest, rest_read


class RestReader:
    """Reads the unread rest of results for workflow code (it needs nothing of the worker's)."""

    @activity.defn(name=READ_REST_ACTIVITY)
    async def read_rest(self, request: RestRequest) -> RestRead:
        """The flags the result carries, its unread rest included, bound to it
        (:func:`duraguard._rest_flags.rest_read`); bound to nothing where it is read whole.
        Where the request gives the call's arguments, the result's notes as outside content
        too (:mod:`duraguard._outside_keys`)."""
        return await asyncio.to_thread(_read, request)


def _read(request: RestRequest) -> RestRead:
    read = rest_read(request.value)
    flags = read.flags if read is not None else ()
    outside = None
    if request.args is not None:
        outside = outside_keys(request.value, request.args, request.day, flags)
    return RestRead(flags=flags, of=read.of if read is not None else "", outside=outside)


__all__ = ["RestReader"]
