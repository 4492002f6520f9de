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
host); a fleet of workers on several hosts shares one PostgreSQL database
(:class:`duraguard.postgres.PostgresConversations`, or ``DURAGUARD_CONVERSATIONS`` set to a
``postgresql://`` URL), or any database behind :class:`ConversationStore`. What is stored goes through the client's data converter, codec included:
with an encryption codec, the conversation is encrypted at rest as history is.

A tool step keeps its result there too, as the model will read it
(:meth:`ConversationStore.keep_result`), so the model step that follows is sent only its digest
and a result is in history once, as its tool step's output (:mod:`duraguard._kept_results`). A
store of your own need not keep results: the default keeps none, and the model step is then
sent them in full.

What the model reads is a separate, pluggable policy (:class:`ContextPolicy`); the default,
:class:`Window`, keeps the system text, the task and the most recent messages, and tells the
model how many it left out: never a silent truncation.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from ._conversation_store import DECODED_STEPS as DECODED_STEPS
from ._conversation_store import ENV as ENV
from ._conversation_store import (
    GAP,
    ConversationLost,
    ConversationStore,
    MemoryConversations,
    Recent,
)
from ._conversation_store import picked_ends as picked_ends
from ._sqlite_store import SqliteConversations
from ._wire import Message
from .postgres import PostgresConversations


class ContextPolicy(ABC):
    """What of a conversation the model reads on one turn."""

    @abstractmethod
    def select(self, messages: Sequence[Message]) -> list[Message]:
        """The messages to send; say so in them when some are left out."""

    async def read(self, store: ConversationStore, conversation: str) -> list[Message]:
        """Read what :meth:`select` needs from ``store`` and select (default: everything)."""
        return self.select(await store.read(conversation))


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

    async def read(self, store: ConversationStore, conversation: str) -> list[Message]:
        """Only the ends of the conversation are read: the same selection as reading it all."""
        recent = await store.read_recent(conversation, self.recent + 1)
        chosen = self.select(recent.padded())
        if any(m is GAP for m in chosen):  # the task was not in the first step
            chosen = self.select(await store.read(conversation))
        return chosen


def default_store() -> ConversationStore:
    """The store the plugin uses unless told otherwise: PostgreSQL where
    ``DURAGUARD_CONVERSATIONS`` is a ``postgresql://`` URL (the ``postgres`` extra), else the
    SQLite file it names (default ``~/.duraguard/conversations.db``)."""
    if os.environ.get(ENV, "").startswith(("postgresql://", "postgres://")):
        return PostgresConversations()
    return SqliteConversations()


__all__ = [
    "ContextPolicy",
    "ConversationLost",
    "ConversationStore",
    "MemoryConversations",
    "Recent",
    "SqliteConversations",
    "Window",
]
