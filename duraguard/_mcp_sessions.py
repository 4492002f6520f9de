"""MCP sessions kept per worker: one connection per server, reused by every call, reconnected
after a failure, its tool list followed.

:func:`duraguard.mcp.mcp_tool` calls a server through a ``connect`` factory. Entering it for
each call starts a stdio server process (or an HTTP session) per call: about 0.9 s a call on
this machine, against about 2 ms a call on a session kept open (``benchmarks/mcp_sessions.py``).
A :class:`SessionPool` keeps one session per (event loop, factory) instead:

* **one owner task** enters the factory's context and holds it for the session's life (anyio's
  cancel scopes must be exited by the task that entered them); calls from any activity use the
  session concurrently; creation is under a lock, so concurrent first calls share one connect;
* **reconnect**: a call that fails on the transport (the process died, the connection closed,
  a request timed out) retires the session; the call fails (Temporal retries the activity) and
  the next call connects afresh. An error the server answered (a JSON-RPC error, ``isError``)
  proves the transport works and keeps the session; so does a cancelled call;
* **idle**: a session nobody used for :attr:`SessionPool.idle_seconds` is closed;
  :func:`close_sessions` closes them all, as the plugin does when the last worker of the event
  loop stops (:func:`while_worker_runs`);
* **list_changed**: the session listens for ``notifications/tools/list_changed`` (the
  ``subscriptions/listen`` stream on a 2026-07-28 connection, the message handler on an older
  one); after one, the next call lists the server's tools again and a call to a tool whose
  definition changed since the worker built it (its annotations, schema or description: what
  its kind and labels were read from), or that is gone, is refused, not retried: the worker
  must list the server again (a restart) for the policy to judge the new definition.

A server that keeps per-session state that must not be shared between workflow runs (sampling,
roots, subscriptions of one user) takes ``mcp_tool(..., reuse_session=False)``: a connection
per call, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import McpToolError

log = logging.getLogger("duraguard.mcp")

IDLE_SECONDS = 300.0
_TRANSPORT_CODES = frozenset({-32000, -32001})
"""JSON-RPC codes the SDK uses for a closed connection and a request that timed out."""


def definition_digest(definition: Any) -> str:
    """What a tool's kind and labels were read from: name, description, schema, annotations."""
    a = getattr(definition, "annotations", None)
    data = {
        "name": definition.name,
        "description": definition.description or definition.title or "",
        "schema": definition.input_schema or {},
        "annotations": a.model_dump(mode="json", exclude_none=True) if a is not None else None,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class _Session:
    connect: Callable[[], Any]
    client: Any = None
    error: BaseException | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    owner: asyncio.Task[None] | None = None
    in_flight: int = 0
    stale: bool = False
    """A tools/list_changed arrived: list again before the next call."""
    tools: dict[str, str] | None = None
    """The server's tools by definition digest, as last listed (``None``: not listed yet)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    idle: asyncio.TimerHandle | None = None

    @property
    def alive(self) -> bool:
        return self.owner is not None and not self.owner.done() and not self.stop.is_set()


class SessionPool:
    """The sessions of one event loop (one worker), by connect factory."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self.sessions: dict[int, _Session] = {}
        self._lock = asyncio.Lock()
        self.connects = 0
        """How many sessions were opened (a reconnect counts)."""

    async def _session(self, connect: Callable[[], Any]) -> _Session:
        async with self._lock:
            s = self.sessions.get(id(connect))
            if s is None or not s.alive:
                s = _Session(connect)
                self.connects += 1
                s.owner = asyncio.get_running_loop().create_task(self._own(s))
                self.sessions[id(connect)] = s
        await s.ready.wait()
        if s.error is not None:
            self.retire(s)
            raise s.error
        return s

    async def _own(self, s: _Session) -> None:
        """Enter the factory's context, hold it until told to stop, exit it here."""
        try:
            given = s.connect()
            if hasattr(given, "message_handler"):  # an mcp.Client not entered yet
                given.message_handler = _following(s, given.message_handler)
            async with given as client:
                s.client = client
                s.ready.set()
                listener = asyncio.get_running_loop().create_task(_listen(s, client))
                try:
                    await s.stop.wait()
                finally:
                    listener.cancel()
                    with contextlib.suppress(BaseException):
                        await listener
        except Exception as err:
            s.error = err
        finally:
            s.client = None
            s.stop.set()
            s.ready.set()

    def retire(self, s: _Session) -> None:
        """Close ``s``; the next call connects afresh."""
        s.stop.set()
        if self.sessions.get(id(s.connect)) is s:
            del self.sessions[id(s.connect)]

    async def call(
        self, connect: Callable[[], Any], name: str, arguments: dict[str, Any], digest: str
    ) -> Any:
        """``call_tool`` on the pooled session; refused where ``name``'s definition changed."""
        s = await self._session(connect)
        s.in_flight += 1
        if s.idle is not None:
            s.idle.cancel()
        try:
            if s.stale:
                await self._relist(s)
            if s.tools is not None and s.tools.get(name) != digest:
                gone = name not in s.tools
                raise McpToolError(
                    f"MCP tool {name!r} {'is gone from' if gone else 'changed on'} its server since "
                    "this worker listed it (its kind and labels were read from the old "
                    "definition); list the server's tools again (restart the worker) to use it"
                )
            return await s.client.call_tool(name, arguments)
        except (McpToolError, asyncio.CancelledError):
            raise
        except Exception as err:
            if _transport(err):
                self.retire(s)
            raise
        finally:
            s.in_flight -= 1
            if s.in_flight == 0 and s.alive:
                loop = asyncio.get_running_loop()
                s.idle = loop.call_later(self.idle_seconds, self._idle, s)

    def _idle(self, s: _Session) -> None:
        if s.in_flight == 0:
            self.retire(s)

    async def _relist(self, s: _Session) -> None:
        async with s.lock:
            if not s.stale:
                return
            s.stale = False
            found: dict[str, str] = {}
            page = await s.client.list_tools(cache_mode="refresh")
            while True:
                found.update({d.name: definition_digest(d) for d in page.tools})
                if not page.next_cursor:
                    break
                page = await s.client.list_tools(cursor=page.next_cursor)
            s.tools = found
            log.info("MCP server's tools listed again after list_changed: %s", sorted(found))

    async def close(self) -> None:
        """Close every session of this pool, waiting for each to exit."""
        owners = [s.owner for s in self.sessions.values() if s.owner is not None]
        for s in list(self.sessions.values()):
            self.retire(s)
        for t in owners:
            with contextlib.suppress(BaseException):
                await t


def _transport(err: BaseException) -> bool:
    """Whether ``err`` says the connection is broken (not that the server said no)."""
    from mcp.shared.exceptions import MCPError

    if isinstance(err, MCPError):
        return err.code in _TRANSPORT_CODES
    return True


def _following(s: _Session, inner: Any) -> Any:
    """A message handler that marks the session's tool list stale on ``list_changed``."""

    async def handle(message: Any) -> None:
        root = getattr(message, "root", message)
        if type(root).__name__ == "ToolListChangedNotification":
            s.stale = True
        if inner is not None:
            await inner(message)

    return handle


async def _listen(s: _Session, client: Any) -> None:
    """Follow ``tools/list_changed`` on a connection that has ``subscriptions/listen``."""
    listen = getattr(client, "listen", None)
    if listen is None:
        return
    try:
        async with listen(tools_list_changed=True) as sub:
            async for _ in sub:
                s.stale = True
    except Exception as err:  # an older protocol (the message handler follows it) or a drop
        log.debug("MCP listen not followed: %s", err)


_POOLS: weakref.WeakKeyDictionary[Any, SessionPool] = weakref.WeakKeyDictionary()


def pool() -> SessionPool:
    """The running event loop's pool (a worker's activities share one loop)."""
    loop = asyncio.get_running_loop()
    found = _POOLS.get(loop)
    if found is None:
        found = _POOLS[loop] = SessionPool()
    return found


async def close_sessions() -> None:
    """Close the running event loop's MCP sessions (the plugin does when its last worker on this
    loop stops; call it yourself where tools ran outside a worker)."""
    found = _POOLS.get(asyncio.get_running_loop())
    if found is not None:
        await found.close()


_RUNNING: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def while_worker_runs() -> AsyncIterator[None]:
    """Around a worker's run: when the last worker of this event loop stops, its MCP sessions
    close (their server processes end) instead of outliving it until the process exits."""
    loop = asyncio.get_running_loop()
    _RUNNING[loop] = _RUNNING.get(loop, 0) + 1
    try:
        yield
    finally:
        _RUNNING[loop] -= 1
        if _RUNNING[loop] == 0:
            await close_sessions()
