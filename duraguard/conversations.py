"""Where an agent's conversation lives: outside event history, behind a reference.

Sending the whole transcript to every model step makes history grow with the square of the
session (a 10,000-call agent would pass the server's limits long before the end). So
``agent_loop`` sends each model step only what is new since the last one (the assistant's
answer and the tool results); the model activity appends it to a :class:`ConversationStore`
under the conversation's reference and reads the conversation back from there. Appends are
idempotent per (conversation, step): a retried model activity appends nothing twice, and a
replay runs no activity at all.

The store is worker-side and shared by every worker of a task queue. The default,
:class:`SqliteConversations`, is a SQLite file (``DURAGUARD_CONVERSATIONS``, else
``~/.duraguard/conversations.db``): right for one machine (the dev server, a single worker
host); a cluster gives every worker the same store (implement :class:`ConversationStore` over
the database you run). What is stored goes through the client's data converter, codec included:
with an encryption codec, the conversation is encrypted at rest as history is.

What the model reads is a separate, pluggable policy (:class:`ContextPolicy`); the default,
:class:`Window`, keeps the system text, the task and the most recent messages, and tells the
model how many it left out: never a silent truncation.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import temporalio.api.common.v1
import temporalio.converter

from ._wire import Message
from .errors import ConfigurationError, StepError

ENV = "DURAGUARD_CONVERSATIONS"


class ConversationLost(StepError):
    """Part of a conversation is missing from this worker's store (a store not shared by every
    worker of the task queue, or one that was wiped)."""

    type_name = "duraguard.ConversationLost"
    retryable = True  # another worker, with the right store, may take the retry


class ConversationStore(ABC):
    """An agent conversation store, shared by every worker of a task queue."""

    @abstractmethod
    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        """Add ``messages`` as step ``step`` of ``conversation``; a step already there is kept
        as it is (retries append nothing twice)."""

    @abstractmethod
    async def read(self, conversation: str) -> list[Message]:
        """Every message of ``conversation``, in order.

        Raises:
            ConversationLost: a step is missing (steps are numbered from 0 without gaps).
        """

    def bind(self, converter: temporalio.converter.DataConverter) -> None:  # noqa: B027
        """The converter (and codec) the plugin uses; a store may encode with it."""


class _Encoded(ConversationStore):
    """A store that keeps each step as bytes made by the data converter (codec included)."""

    def __init__(self, converter: temporalio.converter.DataConverter | None = None) -> None:
        self.converter = converter or temporalio.converter.DataConverter.default

    def bind(self, converter: temporalio.converter.DataConverter) -> None:
        """Use the client's converter (the plugin calls this with the composed one)."""
        self.converter = converter

    async def _encode(self, messages: Sequence[Message]) -> bytes:
        payloads = await self.converter.encode([[m.model_dump(mode="json") for m in messages]])
        return temporalio.api.common.v1.Payloads(payloads=payloads).SerializeToString()

    async def _decode(self, raw: bytes) -> list[Message]:
        payloads = temporalio.api.common.v1.Payloads.FromString(raw)
        (items,) = await self.converter.decode(list(payloads.payloads), [list[dict[str, Any]]])
        return [Message.model_validate(m) for m in items]

    async def read(self, conversation: str) -> list[Message]:
        steps = await self._steps(conversation)
        out: list[Message] = []
        for expected, (step, raw) in enumerate(steps):
            if step != expected:
                raise ConversationLost(
                    f"conversation {conversation!r} misses step {expected} in this worker's "
                    "store: every worker of a task queue needs the same ConversationStore "
                    f"(the default SQLite file, {ENV}, is per machine)"
                )
            out.extend(await self._decode(raw))
        return out

    @abstractmethod
    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]: ...


class MemoryConversations(_Encoded):
    """A store in this process's memory (tests, one-process demos)."""

    def __init__(self, converter: temporalio.converter.DataConverter | None = None) -> None:
        super().__init__(converter)
        self._data: dict[str, dict[int, bytes]] = {}

    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        steps = self._data.setdefault(conversation, {})
        if step not in steps:
            steps[step] = await self._encode(messages)

    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]:
        return sorted(self._data.get(conversation, {}).items())


class SqliteConversations(_Encoded):
    """A store in a SQLite file (one machine); blocking I/O runs off the event loop."""

    def __init__(
        self,
        path: str | Path | None = None,
        converter: temporalio.converter.DataConverter | None = None,
    ) -> None:
        super().__init__(converter)
        chosen = path or os.environ.get(ENV) or Path.home() / ".duraguard" / "conversations.db"
        self.path = Path(chosen)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS steps (conversation TEXT NOT NULL, step INTEGER "
                    "NOT NULL, body BLOB NOT NULL, PRIMARY KEY (conversation, step))"
                )
        except (OSError, sqlite3.Error) as err:
            raise ConfigurationError(
                f"cannot open the conversation store {self.path}: {err}; set {ENV} to a "
                "writable file, or pass DuraguardPlugin(conversations=...)"
            ) from None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        body = await self._encode(messages)

        def write() -> None:
            with self._lock, self._connect() as db:
                db.execute(
                    "INSERT OR IGNORE INTO steps (conversation, step, body) VALUES (?, ?, ?)",
                    (conversation, step, body),
                )

        await asyncio.to_thread(write)

    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]:
        def rows() -> list[tuple[int, bytes]]:
            with self._connect() as db:
                return list(
                    db.execute(
                        "SELECT step, body FROM steps WHERE conversation = ? ORDER BY step",
                        (conversation,),
                    )
                )

        return await asyncio.to_thread(rows)


class ContextPolicy(ABC):
    """What of a conversation the model reads on one turn."""

    @abstractmethod
    def select(self, messages: Sequence[Message]) -> list[Message]:
        """The messages to send; say so in them when some are left out."""


@dataclass(frozen=True)
class Window(ContextPolicy):
    """The system text, the task (the first user message) and the last ``recent`` messages,
    with a note of how many were left out between them. A tool result is never separated from
    the assistant turn that asked for it."""

    recent: int = 200

    def select(self, messages: Sequence[Message]) -> list[Message]:
        head: list[Message] = []
        for m in messages:
            head.append(m)
            if m.role == "user":
                break
        rest = list(messages[len(head) :])
        if len(rest) <= self.recent:
            return [*head, *rest]
        cut = len(rest) - self.recent
        while cut < len(rest) and rest[cut].role == "tool":
            cut += 1  # start at an assistant turn, not inside its tool results
        note = Message(
            role="system",
            content=(
                f"[{cut} earlier messages of this conversation are not shown here; they are "
                "kept, and the task above still stands]"
            ),
        )
        return [*head, note, *rest[cut:]]


def default_store() -> ConversationStore:
    return SqliteConversations()


__all__ = [
    "ContextPolicy",
    "ConversationLost",
    "ConversationStore",
    "MemoryConversations",
    "SqliteConversations",
    "Window",
]
