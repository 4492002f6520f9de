"""What only the PostgreSQL store has: a schema it creates and migrates (once, however many workers
start at once), a server that restarts or cannot be reached (a retryable step failure, never a
lost or doubled message), and the driver as an optional extra. The contract every store keeps
is in tests/test_conversations.py, which runs this store too."""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

import duraguard.postgres
from duraguard._postgres_schema import MIGRATIONS
from duraguard._wire import Message
from duraguard.conversations import ENV, SqliteConversations, Window, default_store
from duraguard.errors import ConfigurationError
from duraguard.postgres import SCHEMA_VERSION, PostgresConversations, StoreUnavailable

from ._postgres import PostgresServer, start_postgres
from ._servers import free_port
from .test_conversations import _steps


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def own_server() -> AsyncIterator[PostgresServer]:
    """A server of this test's own, to stop and start (the session's one stays up)."""
    server = start_postgres()
    try:
        yield server
    finally:
        server.remove()


async def _versions(dsn: str, schema: str) -> list[int]:
    conn = await asyncpg.connect(dsn)
    try:
        return [
            r[0]
            for r in await conn.fetch(
                f"SELECT version FROM {schema}.schema_version ORDER BY version"
            )
        ]
    finally:
        await conn.close()


async def test_the_schema_is_created_once_by_workers_starting_at_once(
    postgres: PostgresServer,
) -> None:
    """Eight workers (each its own pool) make their first call at the same moment on a new
    schema: the advisory lock lets one migrate; every version is recorded once."""
    schema = _schema()
    stores = [PostgresConversations(postgres.dsn, schema=schema) for _ in range(8)]
    try:
        assert await stores[0].schema_version() == (0, 0)
        await asyncio.gather(
            *(
                s.append("c", 0, [Message(role="user", content=f"from {n}")])
                for n, s in enumerate(stores)
            )
        )
        assert await _versions(postgres.dsn, schema) == list(range(1, SCHEMA_VERSION + 1))
        assert all([(await s.schema_version())[0] == SCHEMA_VERSION for s in stores])
        assert len(await stores[3].read("c")) == 1
    finally:
        for s in stores:
            await s.close()


async def test_a_schema_at_version_1_is_migrated_with_its_rows_kept(
    postgres: PostgresServer,
) -> None:
    schema = _schema()
    writer = PostgresConversations(postgres.dsn, schema=schema)
    steps = _steps(12)
    bodies = [await writer._encode(s) for s in steps]
    conn = await asyncpg.connect(postgres.dsn)
    try:  # the schema as version 1 left it, with a conversation in it
        await conn.execute(f"CREATE SCHEMA {schema}")
        await conn.execute(
            f"CREATE TABLE {schema}.schema_version (version integer PRIMARY KEY, oldest_reader "
            "integer NOT NULL DEFAULT 1, migrated timestamptz NOT NULL DEFAULT now())"
        )
        await conn.execute(MIGRATIONS[0][1][0].format(s=schema))
        await conn.execute(f"INSERT INTO {schema}.schema_version VALUES (1)")
        total = 0
        for step, body in enumerate(bodies):
            total += len(steps[step])
            await conn.execute(
                f"INSERT INTO {schema}.steps VALUES ($1, $2, $3, $4)", "old", step, total, body
            )
    finally:
        await conn.close()
    try:
        assert await writer.migrate() == SCHEMA_VERSION
        assert await _versions(postgres.dsn, schema) == list(range(1, SCHEMA_VERSION + 1))
        assert await writer.read("old") == [m for s in steps for m in s]
        text = "x" * 600
        await writer.keep_result("old", "c1", 1, text)
        assert await writer.prune(older_than=3600) == 0  # written "now" by the migration
        assert await writer._result_rows("old", ["c1"])
        assert await writer.prune(older_than=0) == len(steps)
        assert await writer.read("old") == []
        assert await writer._result_rows("old", ["c1"]) == []  # kept results go with them
    finally:
        await writer.close()


async def test_a_schema_a_newer_duraguard_migrated_is_used_or_refused_as_it_says(
    postgres: PostgresServer,
) -> None:
    """A rolling upgrade: a new worker migrated the schema past what this one knows. Where the
    migration says this version still works on it (additive), this worker goes on; where it
    says not, this one refuses the store (retryably: a new worker may take the step), saying
    to upgrade."""
    schema = _schema()
    async with PostgresConversations(postgres.dsn, schema=schema) as store:
        await store.migrate()
    conn = await asyncpg.connect(postgres.dsn)
    newer = f"INSERT INTO {schema}.schema_version VALUES ($1, $2)"
    await conn.execute(newer, SCHEMA_VERSION + 1, 1)
    async with PostgresConversations(postgres.dsn, schema=schema) as old:
        await old.append("c", 0, [Message(role="user", content="still works")])
        assert await old.schema_version() == (SCHEMA_VERSION + 1, 1)
    await conn.execute(newer, SCHEMA_VERSION + 2, SCHEMA_VERSION + 2)
    await conn.close()
    async with PostgresConversations(postgres.dsn, schema=schema) as old:
        with pytest.raises(StoreUnavailable, match="upgrade duraguard on this worker") as caught:
            await old.append("c", 1, [Message(role="user", content="hi")])
        assert not caught.value.non_retryable
        with pytest.raises(StoreUnavailable):
            await old.read("c")  # nor read from: it may not mean what this version thinks


async def test_an_unreachable_database_is_a_retryable_step_failure_naming_it() -> None:
    dsn = f"postgresql://agent:hunter2@127.0.0.1:{free_port()}/agents"
    async with PostgresConversations(dsn, connect_timeout=3) as store:
        for attempt in (
            store.append("c", 0, [Message(role="user", content="hi")]),
            store.read("c"),
        ):
            with pytest.raises(StoreUnavailable) as caught:
                await attempt
            err = caught.value
            assert not err.non_retryable and err.type == "duraguard.StoreUnavailable"
            assert f"agent@127.0.0.1:{dsn.split(':')[3].split('/')[0]}/agents" in str(err)
            assert "check that PostgreSQL runs" in str(err) and "hunter2" not in str(err)
        with pytest.raises(StoreUnavailable):
            await store.schema_version()


async def test_a_missing_database_or_role_says_what_to_fix(postgres: PostgresServer) -> None:
    missing_db = postgres.dsn.rsplit("/", 1)[0] + "/nowhere"
    async with PostgresConversations(missing_db) as store:
        with pytest.raises(StoreUnavailable, match="create the database"):
            await store.read("c")
    no_role = postgres.dsn.replace("duraguard@", "nobody@")
    async with PostgresConversations(no_role) as store:
        with pytest.raises(StoreUnavailable, match="refused the login"):
            await store.read("c")


@pytest.mark.parametrize("how", ["fast shutdown", "crash"])
async def test_the_database_restarted_mid_session_loses_and_doubles_nothing(
    own_server: PostgresServer, how: str
) -> None:
    """Steps appended, the server stopped (SIGINT, or SIGKILL: recovered from its log), the
    session goes on: while it is down each step fails retryably; the retry after it is back
    appends it once; the pool's dead connections are replaced without a failure of their own."""
    store = PostgresConversations(own_server.dsn, max_size=4, connect_timeout=3)
    steps = _steps(40)
    try:
        for step, messages in enumerate(steps[:20]):
            await store.append("s", step, messages)
        own_server.stop(signal.SIGINT if how == "fast shutdown" else signal.SIGKILL)
        with pytest.raises(StoreUnavailable) as caught:
            await store.append("s", 20, steps[20])
        assert not caught.value.non_retryable
        own_server.start()
        for step, messages in enumerate(steps[20:], start=20):
            await store.append("s", step, messages)
            await store.append("s", step, messages)  # the step's retry: nothing twice
        assert await store.read("s") == [m for s in steps for m in s]
        window = Window(recent=30)
        other = PostgresConversations(own_server.dsn)
        assert await window.read(other, "s") == window.select(await store.read("s"))
        await other.close()
    finally:
        await store.close()


async def test_a_step_written_before_the_connection_dropped_is_not_written_again(
    postgres: PostgresServer,
) -> None:
    """The append committed, then the worker's connection was cut before it heard so (the
    server ended the backend): the retried step finds it there and adds nothing."""
    schema = _schema()
    async with PostgresConversations(postgres.dsn, schema=schema, max_size=1) as store:
        await store.append("cut", 0, [Message(role="user", content="first")])

        async def backend(conn: asyncpg.Connection) -> int:
            return int(await conn.fetchval("SELECT pg_backend_pid()"))

        pid = await store._call("find the backend", backend)
        admin = await asyncpg.connect(postgres.dsn)
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        await admin.close()
        await store.append("cut", 0, [Message(role="user", content="first")])
        await store.append("cut", 1, [Message(role="assistant", content="second")])
        assert [m.content for m in await store.read("cut")] == ["first", "second"]


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv(ENV, raising=False)
    yield monkeypatch


def test_without_the_driver_the_error_names_the_extra(no_env: pytest.MonkeyPatch) -> None:
    no_env.setattr(duraguard.postgres, "asyncpg", None)
    with pytest.raises(ImportError, match=r"pip install 'duraguard\[postgres\]'"):
        PostgresConversations("postgresql://db/agents")


def test_a_dsn_and_a_schema_are_checked_when_the_store_is_made(no_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="postgresql:// URL"):
        PostgresConversations()
    with pytest.raises(ConfigurationError, match="postgresql:// URL"):
        PostgresConversations("mysql://db/agents")
    with pytest.raises(ConfigurationError, match="plain lower-case identifier"):
        PostgresConversations("postgresql://db/agents", schema="x; DROP TABLE steps")


def test_the_default_store_is_postgresql_where_the_variable_is_a_url(
    no_env: pytest.MonkeyPatch, tmp_path: object
) -> None:
    no_env.setenv(ENV, "postgresql://agent@db.internal/agents")
    chosen = default_store()
    assert (
        isinstance(chosen, PostgresConversations)
        and chosen.where == "agent@db.internal:5432/agents"
    )
    no_env.setenv(ENV, f"{tmp_path}/c.db")
    assert isinstance(default_store(), SqliteConversations)
