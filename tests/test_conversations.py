"""The conversation stores' shared contract, run by every store (in memory, SQLite, PostgreSQL):
read from its ends, what the model reads is the same as reading the whole conversation, at step
10 and at step 10,000; a step is appended once whoever appends it and however often; a missing
step is a lost conversation, never a shorter one; what is stored went through the codec.

The PostgreSQL cases run on a real server the suite starts itself (tests/_postgres.py); what
only a server can do (restarts, migrations, an unreachable database) is in
tests/test_postgres_store.py."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import temporalio.converter

from duraguard._byref import digest
from duraguard._kept_results import RecentResults
from duraguard._wire import Message, ToolCall
from duraguard.codec import AesGcmCodec
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


@dataclass
class Backing:
    """Where a kind of store keeps its data; ``open`` makes one more store on it (another
    worker's), the same object for the in-memory store (one process)."""

    kind: str
    open: Callable[..., ConversationStore]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def backing(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backing]:
    if request.param == "memory":
        memory = MemoryConversations()
        yield Backing("memory", lambda converter=None: memory)
        return
    if request.param == "sqlite":
        yield Backing(
            "sqlite", lambda converter=None: SqliteConversations(tmp_path / "c.db", converter)
        )
        return
    from duraguard.postgres import PostgresConversations

    server = request.getfixturevalue("postgres")
    schema = f"t_{uuid.uuid4().hex[:12]}"  # each test a schema of its own
    opened: list[PostgresConversations] = []

    def open_pg(converter: temporalio.converter.DataConverter | None = None) -> ConversationStore:
        opened.append(PostgresConversations(server.dsn, converter, schema=schema))
        return opened[-1]

    yield Backing("postgres", open_pg)
    for store in opened:
        await store.close()


@pytest.fixture
def store(backing: Backing) -> ConversationStore:
    return backing.open()


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


async def test_two_workers_appending_to_one_conversation_at_once_append_each_step_once(
    backing: Backing,
) -> None:
    """Two stores on one backing (two workers) race to append every step, each its own copy
    (as a retried step and its first attempt on another worker would): each step is there once,
    whole, from one of them, and the totals a turn reads by agree with reading everything."""
    a, b = backing.open(), backing.open()
    steps = _steps(120)

    def copy(messages: list[Message], who: str) -> list[Message]:
        return [m.model_copy(update={"name": who}) for m in messages]

    for step, messages in enumerate(steps):
        await asyncio.gather(
            a.append("race", step, copy(messages, "a")), b.append("race", step, copy(messages, "b"))
        )
    for reader in (a, b):
        read = await reader.read("race")
        assert [m.model_copy(update={"name": None}) for m in read] == [m for s in steps for m in s]
        at = 0
        for messages in steps:  # each step wholly one worker's copy, never a mix
            assert len({m.name for m in read[at : at + len(messages)]}) == 1
            at += len(messages)
        window = Window(recent=25)
        assert await window.read(reader, "race") == window.select(read)


async def test_many_conversations_appended_at_once_keep_to_themselves(backing: Backing) -> None:
    a, b = backing.open(), backing.open()
    steps = _steps(15)

    async def session(n: int) -> None:
        for step, messages in enumerate(steps):
            await (a if (n + step) % 2 else b).append(f"s{n}", step, messages)

    await asyncio.gather(*(session(n) for n in range(20)))
    for n in range(20):
        assert await (a if n % 2 else b).read(f"s{n}") == [m for s in steps for m in s]


@pytest.mark.no_cover  # CPU-bound, covered elsewhere: not traced
async def test_a_conversation_of_10000_steps_reads_only_its_ends(backing: Backing) -> None:
    store = backing.open()
    steps = _steps(9_999, seed=11)
    window = Window(recent=200)
    for step, messages in enumerate(steps):
        await store.append("long", step, messages)
    everything = await store.read("long")
    assert len(everything) == sum(len(s) for s in steps)
    recent = await store.read_recent("long", 201)
    assert recent.skipped > 20_000 and len(recent.first) == 2
    assert await window.read(store, "long") == window.select(everything)
    fresh = backing.open()  # another worker, nothing decoded yet: reads the ends alone
    assert await window.read(fresh, "long") == window.select(everything)


async def test_what_is_stored_went_through_the_codec(backing: Backing) -> None:
    """Bound to an encrypting converter (as the plugin binds the client's), a store keeps only
    ciphertext; another worker with the same keys reads it back."""
    if backing.kind == "memory":
        pytest.skip("the in-memory store keeps nothing at rest")
    codec = AesGcmCodec({"k1": b"k" * 32})
    converter = dataclasses.replace(temporalio.converter.DataConverter.default, payload_codec=codec)
    writer = backing.open(converter)
    secret = f"card 4111 {uuid.uuid4().hex}"
    await writer.append("enc", 0, [Message(role="user", content=secret)])
    raw = await writer._steps("enc")  # type: ignore[attr-defined]
    assert raw and all(secret.encode() not in body for _, body in raw)
    assert (await backing.open(converter).read("enc"))[0].content == secret


async def test_a_step_this_worker_appended_is_read_back_without_decoding_it(
    backing: Backing,
) -> None:
    """The model step appends what is new and reads the conversation back: what it wrote
    itself is not fetched and decoded again; what another worker wrote is, once."""
    mine, other = backing.open(), backing.open()
    decoded: list[int] = []
    real = mine._decode  # type: ignore[attr-defined]

    async def counting(raw: bytes) -> list[Message]:
        decoded.append(len(raw))
        return list(await real(raw))

    mine._decode = counting  # type: ignore[attr-defined]
    steps = _steps(6)
    window = Window(recent=50)
    for step, messages in enumerate(steps):
        await mine.append("mine", step, messages)
        assert await window.read(mine, "mine") == window.select(
            [m for s in steps[: step + 1] for m in s]
        )
    assert decoded == []
    if backing.kind != "memory":  # one store object in memory: no other worker to write
        await other.append("theirs", 0, steps[0])
        await mine.append("theirs", 0, steps[0])  # a retry of theirs: not written, so not kept
        await window.read(mine, "theirs")
        await window.read(mine, "theirs")
        assert len(decoded) == 1


# -- tool results kept for the model step (duraguard._kept_results) ------------------------


def _result(n: int) -> str:
    return '{"hits":[' + ",".join(f'{{"id":"KB-{n}-{k}"}}' for k in range(40)) + "]}"


async def test_a_kept_result_is_found_by_its_digest_from_any_worker(backing: Backing) -> None:
    writer, reader = backing.open(), backing.open()
    first, retried = _result(1), _result(2)
    await writer.keep_result("conv", "c1", 1, first)
    await writer.keep_result("conv", "c1", 2, retried)  # the attempt whose output was recorded
    await writer.keep_result("conv", "c2", 1, _result(3))
    wanted = {"c1": digest(retried), "c2": digest(_result(3))}
    assert await reader.kept_results("conv", wanted) == {"c1": retried, "c2": _result(3)}
    assert await reader.kept_results("conv", {"c1": digest(first)}) == {"c1": first}
    # another digest, another call, another conversation: nothing (the step is sent in full)
    assert await reader.kept_results("conv", {"c1": digest(_result(4))}) == {}
    assert await reader.kept_results("conv", {"c9": digest(first)}) == {}
    assert await reader.kept_results("other", {"c1": digest(first)}) == {}
    await writer.keep_result("conv", "c1", 1, first)  # a retried write keeps what is there
    assert await backing.open().kept_results("conv", {"c1": digest(first)}) == {"c1": first}


async def test_a_kept_result_went_through_the_codec_and_names_no_digest(backing: Backing) -> None:
    """Encrypted at rest as the conversation is; the rows name the call, not a digest of the
    plaintext (which would let whoever reads the database confirm a guess of it)."""
    if backing.kind == "memory":
        pytest.skip("the in-memory store keeps nothing at rest")
    codec = AesGcmCodec({"k1": b"k" * 32})
    converter = dataclasses.replace(temporalio.converter.DataConverter.default, payload_codec=codec)
    secret = _result(5).replace("KB-5-0", f"card 4111 {uuid.uuid4().hex}")
    await backing.open(converter).keep_result("enc", "c1", 1, secret)
    fresh = backing.open(converter)
    rows = await _every_kept_row(fresh)
    assert len(rows) == 1
    written = repr(rows).encode()  # every column, as text and as bytes
    assert b"card 4111" not in written and b"4111" not in b"".join(
        c for c in rows[0] if isinstance(c, bytes)
    )
    hashed = digest(secret)
    assert hashed.encode() not in written and bytes.fromhex(hashed) not in written
    assert await fresh.kept_results("enc", {"c1": digest(secret)}) == {"c1": secret}
    plain = backing.open()  # a worker without the keys finds nothing it can use
    with pytest.raises(Exception):  # noqa: B017 - the codec's own error
        await plain.kept_results("enc", {"c1": digest(secret)})


async def _every_kept_row(store: ConversationStore) -> list[tuple[Any, ...]]:
    """Every row of the store's kept results, every column, as the database holds it."""
    if isinstance(store, SqliteConversations):
        with sqlite3.connect(store.path) as db:
            return [tuple(r) for r in db.execute("SELECT * FROM results")]
    import asyncpg

    from duraguard.postgres import PostgresConversations

    assert isinstance(store, PostgresConversations)
    conn = await asyncpg.connect(store.dsn)
    try:
        rows = await conn.fetch(f"SELECT * FROM {store.schema}.results")
    finally:
        await conn.close()
    return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r.values()) for r in rows]


async def test_a_store_that_keeps_no_results_finds_none() -> None:
    """A store of the user's own (only the abstract methods): the default keeps nothing and
    finds nothing, so every result is sent in full."""

    class Plain(ConversationStore):
        async def append(self, conversation: str, step: int, messages: Any) -> None: ...
        async def read(self, conversation: str) -> list[Message]:
            return []

    store = Plain()
    await store.keep_result("conv", "c1", 1, _result(1))
    assert await store.kept_results("conv", {"c1": digest(_result(1))}) == {}


def test_what_a_worker_holds_in_memory_stays_within_its_budget() -> None:
    recent = RecentResults(budget=10_000)
    for n in range(40):
        recent.keep("conv", f"c{n}", _result(n))
    assert recent._size <= 10_000
    held = recent.matching("conv", {f"c{n}": digest(_result(n)) for n in range(40)})
    assert held and "c39" in held and "c0" not in held  # the latest kept, the oldest dropped
    recent.keep("conv", "huge", "x" * 20_000)  # larger than the budget: not held at all
    assert recent.matching("conv", {"huge": digest("x" * 20_000)}) == {}


async def test_sqlite_prune_deletes_conversations_idle_past_the_bound_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    """``SqliteConversations.prune``: a conversation whose latest step is older than the bound
    goes whole, with the results kept that long; one written since stays, and a model step on
    the pruned one is told it is lost. A file from before steps were dated counts them as
    written when it was opened."""
    path = tmp_path / "c.db"
    steps = _steps(6)
    _old_file(path, steps, [await MemoryConversations()._encode(s) for s in steps])
    store = SqliteConversations(path, kept_in_memory=0)
    for i, step in enumerate(_steps(3)):
        await store.append("live", i, step)
    await store.keep_result("run-idle", "c1", 1, "x" * 600)
    await store.keep_result("run-live", "c1", 1, "y" * 600)
    assert await store.prune(older_than=3600) == 0  # dated "now" when the file was opened
    with sqlite3.connect(path) as db:  # two days pass for the idle conversation and its result
        db.execute("UPDATE steps SET written = written - 2 WHERE conversation = 'idle'")
        db.execute("UPDATE results SET written = written - 2 WHERE run_id = 'run-idle'")
    assert await store.prune(older_than=86_400) == len(steps)
    with pytest.raises(ConversationLost, match="misses step 0"):
        await store.read_recent("idle", 8)
    assert len(await store.read("live")) == sum(len(s) for s in _steps(3))
    wanted = {"c1": digest("y" * 600)}
    assert await store.kept_results("run-live", wanted) == {"c1": "y" * 600}
    assert await store.kept_results("run-idle", {"c1": digest("x" * 600)}) == {}
    assert await store.prune(older_than=0) == 4  # everything, now
    assert await store.kept_results("run-live", wanted) == {}
    with pytest.raises(ValueError, match="0 or more seconds"):
        await store.prune(older_than=-1)


def _old_file(path: Path, steps: list[list[Message]], bodies: list[bytes]) -> None:
    """A store's file as a version before steps were dated wrote it."""
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE steps (conversation TEXT NOT NULL, step INTEGER NOT NULL, body BLOB NOT "
        "NULL, total INTEGER, PRIMARY KEY (conversation, step))"
    )
    total = 0
    for i, body in enumerate(bodies):
        total += len(steps[i])
        old.execute("INSERT INTO steps VALUES ('idle', ?, ?, ?)", (i, body, total))
    old.commit()
    old.close()


async def test_workers_opening_a_file_of_an_earlier_version_at_once_all_start(
    tmp_path: Path,
) -> None:
    """A worker opening a file from before steps were dated while another migrates it waits for
    that migration and starts (before, it had read the columns first and failed on "duplicate
    column name"); eight more at once all start, and every step is dated."""
    path = tmp_path / "c.db"
    steps = _steps(4)
    _old_file(path, steps, [await MemoryConversations()._encode(s) for s in steps])
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("BEGIN IMMEDIATE")  # another worker, migrating
    opening = asyncio.ensure_future(asyncio.to_thread(SqliteConversations, path))
    await asyncio.sleep(0.5)  # this worker reads what it may meanwhile
    other.execute("ALTER TABLE steps ADD COLUMN written REAL")
    other.execute("UPDATE steps SET written = julianday('now')")
    other.execute("COMMIT")
    other.close()
    stores = [await opening]
    stores += await asyncio.gather(
        *(asyncio.to_thread(SqliteConversations, path) for _ in range(8))
    )
    for store in stores:
        assert len(await store.read("idle")) == sum(len(x) for x in steps)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM steps WHERE written IS NULL").fetchone() == (0,)


async def test_prune_keeps_a_conversation_a_worker_of_an_earlier_version_still_writes(
    tmp_path: Path,
) -> None:
    """In a rolling upgrade a worker still on the earlier version appends undated steps: the
    conversation is not taken for idle (its steps are dated when prune first sees them)."""
    path = tmp_path / "c.db"
    store = SqliteConversations(path)
    for i, step in enumerate(_steps(2)):
        await store.append("live", i, step)
    with sqlite3.connect(path) as db:  # days old, then an old worker's step with no date
        db.execute("UPDATE steps SET written = written - 3")
        db.execute(
            "INSERT INTO steps (conversation, step, body, total) SELECT 'live', 3, body, NULL "
            "FROM steps WHERE conversation = 'live' AND step = 0"
        )
    assert await store.prune(older_than=86_400) == 0
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM steps WHERE written IS NULL").fetchone() == (0,)
