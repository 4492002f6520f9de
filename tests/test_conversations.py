"""The conversation store read from its ends: what the model reads is the same as reading the
whole conversation, at step 10 and at step 3,000, whichever store keeps it."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from duraguard._wire import Message, ToolCall
from duraguard.conversations import (
    ConversationLost,
    ConversationStore,
    MemoryConversations,
    SqliteConversations,
    Window,
)


def _steps(n: int, seed: int = 7) -> list[list[Message]]:
    """A loop's steps: the task, then per turn the assistant's calls and their results."""
    rng = random.Random(seed)
    steps = [[Message(role="system", content="be brief"), Message(role="user", content="task")]]
    for turn in range(n):
        calls = [
            ToolCall(id=f"t{turn}-{k}", name="search", arguments={})
            for k in range(rng.randint(1, 3))
        ]
        step = [Message(role="assistant", content=None, tool_calls=tuple(calls))]
        step += [Message(role="tool", content=f"result {c.id}", tool_call_id=c.id) for c in calls]
        if rng.random() < 0.1:
            step.append(Message(role="user", content=f"a correction at {turn}"))
        steps.append(step)
    return steps


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ConversationStore:
    if request.param == "memory":
        return MemoryConversations()
    return SqliteConversations(tmp_path / "conversations.db")


@pytest.mark.parametrize("turns", [0, 3, 60, 250])
async def test_window_reads_the_ends_and_selects_what_reading_everything_selects(
    store: ConversationStore, turns: int
) -> None:
    window = Window(recent=40)
    for step, messages in enumerate(_steps(turns)):
        await store.append("c1", step, messages)
        expected = window.select(await store.read("c1"))
        assert await window.read(store, "c1") == expected
    everything = await store.read("c1")
    recent = await store.read_recent("c1", 40)
    assert len(recent.padded()) == len(everything)
    if turns >= 60:
        assert recent.skipped > 0  # the middle of a long conversation is not read


async def test_a_retried_step_is_appended_once(store: ConversationStore) -> None:
    steps = _steps(5)
    for step, messages in enumerate(steps):
        await store.append("c2", step, messages)
        await store.append("c2", step, [Message(role="user", content="a retry's copy")])
    assert await store.read("c2") == [m for s in steps for m in s]
    assert await Window(recent=3).read(store, "c2") == Window(recent=3).select(
        await store.read("c2")
    )


async def test_a_missing_step_is_a_lost_conversation_not_a_shorter_one(
    store: ConversationStore,
) -> None:
    steps = _steps(30)
    for step, messages in enumerate(steps):
        if step != 25:
            await store.append("c3", step, messages)
    with pytest.raises(ConversationLost, match="misses step 25"):
        await Window(recent=10).read(store, "c3")
    with pytest.raises(ConversationLost, match="misses step 0"):
        await store.append("c4", 1, steps[1])
        await Window(recent=10).read(store, "c4")


async def test_a_store_written_before_steps_were_counted_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE steps (conversation TEXT NOT NULL, step INTEGER NOT NULL, body BLOB NOT "
        "NULL, PRIMARY KEY (conversation, step))"
    )
    old.commit()
    old.close()
    writer = MemoryConversations()
    steps = _steps(20)
    bodies = [await writer._encode(s) for s in steps]
    old = sqlite3.connect(path)
    old.executemany(
        "INSERT INTO steps (conversation, step, body) VALUES ('c5', ?, ?)", enumerate(bodies)
    )
    old.commit()
    old.close()
    store = SqliteConversations(path)
    await store.append("c5", len(steps), [Message(role="user", content="and one more")])
    everything = await store.read("c5")
    assert len(everything) == sum(len(s) for s in steps) + 1
    assert await Window(recent=8).read(store, "c5") == Window(recent=8).select(everything)
