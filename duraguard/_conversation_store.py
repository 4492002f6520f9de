"""Conversation stores: where an agent's conversation lives, outside event history (the
stores themselves; :mod:`duraguard.conversations` is the public module, with what the model reads).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import temporalio.api.common.v1
import temporalio.converter

from ._kept_results import KEPT_IN_MEMORY, RecentResults, matching
from ._wire import Message
from .errors import StepError

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

    async def read_recent(self, conversation: str, last: int) -> Recent:
        """The first step's messages and at least the ``last`` latest messages (whole steps),
        with the number of messages between them; what a :class:`Window` reads, so a long
        conversation costs the same to read at step 10 and at step 10,000.

        The default reads everything; a store that can do better overrides it.

        Raises:
            ConversationLost: a step is missing.
        """
        messages = await self.read(conversation)
        return Recent(first=messages, skipped=0, last=[])

    def bind(self, converter: temporalio.converter.DataConverter) -> None:  # noqa: B027
        """The converter (and codec) the plugin uses; a store may encode with it."""

    async def keep_result(  # noqa: B027
        self, run_id: str, call_id: str, attempt: int, text: str
    ) -> None:
        """Keep attempt ``attempt`` of a tool step's result (call ``call_id`` of the workflow run
        ``run_id``), as the model will read it, for the model step that follows
        (:mod:`duraguard._kept_results`). The default keeps nothing: the model step is then
        sent the result in full."""

    async def kept_results(self, run_id: str, wanted: Mapping[str, str]) -> dict[str, str]:
        """The kept results of the run's calls ``wanted`` names (call id: the text's
        digest) that have that digest; a call missing from the answer is sent in full."""
        return {}


@dataclass(frozen=True)
class Recent:
    """The two ends of a conversation (:meth:`ConversationStore.read_recent`): ``first`` then
    ``skipped`` messages not read, then ``last``."""

    first: list[Message]
    skipped: int
    last: list[Message]

    def padded(self) -> list[Message]:
        """The whole conversation's length, with :data:`GAP` where a message was not read."""
        return [*self.first, *([GAP] * self.skipped), *self.last]


GAP = Message(role="system", content="(not read)")
"""Stands for a message :meth:`ConversationStore.read_recent` did not read."""

DECODED_STEPS = 4096
"""Decoded steps a store keeps in memory (steps never change once written), so a turn decodes
only what is new."""


class _Encoded(ConversationStore):
    """A store that keeps each step as bytes made by the data converter (codec included)."""

    def __init__(
        self,
        converter: temporalio.converter.DataConverter | None = None,
        kept_in_memory: int = KEPT_IN_MEMORY,
    ) -> None:
        self.converter = converter or temporalio.converter.DataConverter.default
        self._decoded: OrderedDict[tuple[str, int], list[Message]] = OrderedDict()
        self._results = RecentResults(kept_in_memory)

    def bind(self, converter: temporalio.converter.DataConverter) -> None:
        """Use the client's converter (the plugin calls this with the composed one)."""
        self.converter = converter
        self._decoded.clear()

    async def _encode(self, messages: Sequence[Message]) -> bytes:
        payloads = await self.converter.encode([[m.model_dump(mode="json") for m in messages]])
        return temporalio.api.common.v1.Payloads(payloads=payloads).SerializeToString()

    async def _decode(self, raw: bytes) -> list[Message]:
        payloads = temporalio.api.common.v1.Payloads.FromString(raw)
        (items,) = await self.converter.decode(list(payloads.payloads), [list[dict[str, Any]]])
        return [Message.model_validate(m) for m in items]

    async def keep_result(self, run_id: str, call_id: str, attempt: int, text: str) -> None:
        self._results.keep(run_id, call_id, text)
        (payload,) = await self.converter.encode([text])
        await self._put_result(run_id, call_id, attempt, payload.SerializeToString())

    async def kept_results(self, run_id: str, wanted: Mapping[str, str]) -> dict[str, str]:
        found = self._results.matching(run_id, wanted)
        rest = [c for c in wanted if c not in found]
        if rest:
            decoded = []
            for call_id, raw in await self._result_rows(run_id, rest):
                payload = temporalio.api.common.v1.Payload.FromString(raw)
                (text,) = await self.converter.decode([payload], [str])
                decoded.append((call_id, text))
            found.update(matching(decoded, wanted))
        return found

    async def _put_result(self, run_id: str, call_id: str, attempt: int, raw: bytes) -> None:
        """Store one attempt's encoded result (a row already there is kept)."""

    async def _result_rows(self, run_id: str, call_ids: list[str]) -> list[tuple[str, bytes]]:
        """Every stored attempt of these calls: (call id, encoded result)."""
        return []

    async def _step(self, conversation: str, step: int, raw: bytes) -> list[Message]:
        key = (conversation, step)
        found = self._decoded.get(key)
        if found is None:
            found = await self._decode(raw)
            self._keep(conversation, step, found)
        else:
            self._decoded.move_to_end(key)
        return found

    def _keep(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        """Remember a step's messages: decoded from the store, or appended by this process (a
        store calls it only where its append wrote the step: a step already there may hold
        another attempt's messages). The model step that appends a step reads it next."""
        self._decoded[(conversation, step)] = list(messages)
        while len(self._decoded) > DECODED_STEPS:
            self._decoded.popitem(last=False)

    async def read(self, conversation: str) -> list[Message]:
        steps = await self._steps(conversation)
        out: list[Message] = []
        for expected, (step, raw) in enumerate(steps):
            if step != expected:
                raise _lost(conversation, expected)
            out.extend(await self._step(conversation, step, raw))
        return out

    async def read_recent(self, conversation: str, last: int) -> Recent:
        ends = await self._ends(conversation, last)
        if ends is None:  # a store written before steps were counted
            return await super().read_recent(conversation, last)
        total, steps = ends
        if not steps or steps[0] != 0:
            raise _lost(conversation, 0)
        for expected, step in enumerate(steps[1:], start=steps[1] if len(steps) > 1 else 1):
            if step != expected:
                raise _lost(conversation, expected)
        wanted = [s for s in steps if (conversation, s) not in self._decoded]
        bodies = await self._bodies(conversation, wanted) if wanted else {}
        read: list[list[Message]] = []
        for step in steps:
            raw = bodies.get(step)
            if raw is None and (conversation, step) not in self._decoded:
                raise _lost(conversation, step)
            read.append(await self._step(conversation, step, raw or b""))
        first = read[0]
        later = [m for messages in read[1:] for m in messages]
        skipped = total - len(first) - len(later)
        if skipped < 0:
            raise _lost(conversation, steps[-1])
        return Recent(first=first, skipped=skipped, last=later)

    @abstractmethod
    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]: ...

    async def _ends(self, conversation: str, last: int) -> tuple[int, list[int]] | None:
        """The number of messages in the conversation, and step 0 followed by the latest steps
        holding at least ``last`` messages, in order; ``None`` where steps were not counted."""
        return None

    async def _bodies(self, conversation: str, steps: Sequence[int]) -> dict[int, bytes]:
        """The stored bytes of these steps (those that are there)."""
        wanted = set(steps)
        return {s: raw for s, raw in await self._steps(conversation) if s in wanted}


def picked_ends(
    newest_first: Iterable[tuple[int, int | None]], last: int
) -> tuple[int, list[int]] | None:
    """What :meth:`_Encoded._ends` returns, from a store's (step, total) rows newest first (at
    least ``last + 1`` of them where there are that many): the conversation's length, and step
    0 followed by the latest steps holding at least ``last`` messages; ``None`` where a step's
    total was not counted."""
    picked: list[int] = []
    total: int | None = None
    for step, upto in newest_first:
        if upto is None:
            return None
        if total is None:
            total = int(upto)
        if step == 0 or total - upto >= last:
            break  # the step after this one holds the ``last``-th latest message
        picked.append(step)
    if total is None:
        return 0, []
    return total, [0, *picked[::-1]]


def _lost(conversation: str, step: int) -> ConversationLost:
    return ConversationLost(
        f"conversation {conversation!r} misses step {step} in this worker's store: every "
        "worker of a task queue needs the same ConversationStore (the default SQLite file, "
        f"{ENV}, is per machine)"
    )


class MemoryConversations(_Encoded):
    """A store in this process's memory (tests, one-process demos)."""

    def __init__(self, converter: temporalio.converter.DataConverter | None = None) -> None:
        super().__init__(converter)
        self._data: dict[str, dict[int, bytes]] = {}
        self._totals: dict[str, dict[int, int | None]] = {}
        """Messages in steps 0..step (None where a step before is missing)."""
        self._kept: dict[tuple[str, str], dict[int, bytes]] = {}

    async def _put_result(self, run_id: str, call_id: str, attempt: int, raw: bytes) -> None:
        self._kept.setdefault((run_id, call_id), {}).setdefault(attempt, raw)

    async def _result_rows(self, run_id: str, call_ids: list[str]) -> list[tuple[str, bytes]]:
        return [(c, raw) for c in call_ids for raw in self._kept.get((run_id, c), {}).values()]

    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        steps = self._data.setdefault(conversation, {})
        if step not in steps:
            steps[step] = await self._encode(messages)
            self._keep(conversation, step, messages)
            totals = self._totals.setdefault(conversation, {})
            before = totals.get(step - 1) if step else 0
            totals[step] = None if before is None else before + len(messages)

    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]:
        return sorted(self._data.get(conversation, {}).items())

    async def _ends(self, conversation: str, last: int) -> tuple[int, list[int]] | None:
        totals = self._totals.get(conversation, {})
        picked: list[int] = []
        total: int | None = None
        for step in sorted(totals, reverse=True):
            upto = totals[step]
            if upto is None:
                return None
            if total is None:
                total = upto
            if step == 0 or total - upto >= last:
                break
            picked.append(step)
        return total or 0, ([0] if 0 in totals else []) + picked[::-1]

    async def _bodies(self, conversation: str, steps: Sequence[int]) -> dict[int, bytes]:
        stored = self._data.get(conversation, {})
        return {s: stored[s] for s in steps if s in stored}
