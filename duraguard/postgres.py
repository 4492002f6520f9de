"""A conversation store on PostgreSQL: one store for every worker of a fleet, on any host.

``pip install 'duraguard[postgres]'`` (the driver is asyncpg), then give every worker the same
database, either in code::

    DuraguardPlugin(conversations=PostgresConversations("postgresql://user@db/agents"))

or by setting ``DURAGUARD_CONVERSATIONS=postgresql://user@db/agents`` on every worker (the
plugin's default store then is this one). It behaves as the SQLite store does: appends are
idempotent per (conversation, step), whatever two workers race to write; a step is encoded with
the client's data converter, codec included, so an encrypted deployment stores only ciphertext.

The schema (``duraguard`` unless told otherwise) is created and migrated by the first call of
any worker, under an advisory lock, so a fleet that starts at once migrates it once; the
versions applied are rows of ``<schema>.schema_version``, each with the oldest duraguard schema
that still works on it (an additive migration keeps older workers working through a rolling
upgrade). A database that cannot be reached, refuses the login or was migrated past what this
duraguard can use fails the step with
:class:`StoreUnavailable`, a retryable error: Temporal retries the model step, and because the
append is idempotent the retry neither loses nor doubles a message.

Why asyncpg: one package with its pool built in (psycopg 3 needs psycopg_pool beside it and a
libpq, the system's or a binary wheel's), wheels for every platform CPython 3.11 runs on, the
binary protocol (a step's bytes travel as they are). Behind PgBouncer in transaction mode pass
``statement_cache_size=0``.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import temporalio.converter

from ._conversation_store import ENV, _Encoded, picked_ends
from ._kept_results import KEPT_IN_MEMORY
from ._postgres_schema import MIGRATIONS, SCHEMA_VERSION, TooNew, schema_state, where
from ._wire import Message
from .errors import ConfigurationError, StepError

try:
    import asyncpg
except ImportError:  # pragma: no cover - exercised where the extra is missing
    asyncpg = None

_LOCK_CLASS = 0x64677264  # "dgrd": the advisory lock's first key; the schema's hash the second
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
T = TypeVar("T")


class StoreUnavailable(StepError):
    """The conversation store cannot be used right now (unreachable, restarting, refusing the
    login, migrated by a newer duraguard). Retryable: the model step is tried again."""

    type_name = "duraguard.StoreUnavailable"
    retryable = True


def _lost_connection() -> tuple[type[BaseException], ...]:
    """Errors after which a fresh connection may succeed (the server restarted, say)."""
    e = asyncpg.exceptions
    return (
        OSError,
        TimeoutError,
        e.PostgresConnectionError,
        e.OperatorInterventionError,
        e.InterfaceError,
        e.InternalClientError,  # a connection the server ended while it sat in the pool
    )


class PostgresConversations(_Encoded):
    """Agent conversations in a PostgreSQL database shared by every worker.

    Args:
        dsn: A ``postgresql://`` URL (asyncpg's form, with its query options); default
            ``DURAGUARD_CONVERSATIONS`` where that is one.
        converter: What encodes a step (the plugin binds its own, codec included).
        schema: The schema the tables live in (created when missing).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most (a worker's concurrent model steps).
        connect_timeout: Seconds to wait for a connection (a pooled one, or a new one).
        command_timeout: Seconds one statement may take.
        statement_cache_size: asyncpg's prepared statements per connection (0 behind PgBouncer
            in transaction mode).
        kept_in_memory: Characters of tool results this worker kept that it also holds in
            memory (:mod:`duraguard._kept_results`), so the model step after a tool step on the
            same worker reads none from the database; 0 reads every one from it.

    Raises:
        ImportError: asyncpg is not installed (``pip install 'duraguard[postgres]'``).
        ConfigurationError: no DSN, or a schema name that is not a plain identifier.
    """

    def __init__(
        self,
        dsn: str | None = None,
        converter: temporalio.converter.DataConverter | None = None,
        *,
        schema: str = "duraguard",
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 10.0,
        command_timeout: float = 30.0,
        statement_cache_size: int = 100,
        kept_in_memory: int = KEPT_IN_MEMORY,
    ) -> None:
        if asyncpg is None:
            raise ImportError(
                "PostgresConversations needs the asyncpg driver: pip install 'duraguard[postgres]'"
            )
        super().__init__(converter, kept_in_memory)
        chosen = dsn or os.environ.get(ENV, "")
        if not is_postgres_url(chosen):
            raise ConfigurationError(
                f"PostgresConversations needs a postgresql:// URL (got {where(chosen)!r}): pass "
                f"dsn=... or set {ENV}=postgresql://user@host/database"
            )
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigurationError(
                f"schema {schema!r} is not a plain lower-case identifier (letters, digits, _)"
            )
        self.dsn, self.schema = chosen, schema
        self._options: dict[str, Any] = {
            "min_size": min_size,
            "max_size": max_size,
            "timeout": connect_timeout,
            "command_timeout": command_timeout,
            "statement_cache_size": statement_cache_size,
            "max_inactive_connection_lifetime": 300.0,
        }
        self.connect_timeout = connect_timeout
        self._pool: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening = asyncio.Lock()

    @property
    def where(self) -> str:
        """The database, without its password."""
        return where(self.dsn)

    # -- the pool and the schema ---------------------------------------------------------
    async def _ready_pool(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._loop is loop:
            return self._pool
        if self._loop is not loop:  # a pool serves the event loop it was made in
            self._pool, self._loop, self._opening = None, loop, asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = await asyncpg.create_pool(self.dsn, **self._options)
                try:
                    async with pool.acquire() as conn:
                        await self._migrate(conn)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def _migrate(self, conn: Any) -> int:
        s = self.schema
        async with conn.transaction():
            # Held to the end of this transaction: workers starting at once migrate one by one.
            await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", _LOCK_CLASS, s)
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer PRIMARY KEY, "
                "oldest_reader integer NOT NULL DEFAULT 1, migrated timestamptz NOT NULL "
                "DEFAULT now())"
            )
            current, oldest = await schema_state(conn, s)
            if oldest > SCHEMA_VERSION:
                raise TooNew(current)
            for version in range(current + 1, SCHEMA_VERSION + 1):
                reader, statements = MIGRATIONS[version - 1]
                for statement in statements:
                    await conn.execute(statement.format(s=s))
                await conn.execute(
                    f"INSERT INTO {s}.schema_version (version, oldest_reader) VALUES ($1, $2)",
                    version,
                    reader,
                )
        return max(current, SCHEMA_VERSION)

    async def migrate(self) -> int:
        """Create or migrate the schema now (the first call does it anyway); its version.

        Raises:
            StoreUnavailable: the database cannot be reached or is newer than this duraguard.
        """
        return await self._call("migrate the schema", self._migrate)

    async def schema_version(self) -> tuple[int, int]:
        """The schema version the database holds and the oldest duraguard schema version that
        can use it, without migrating (``(0, 0)``: not created yet); a worker whose
        :data:`SCHEMA_VERSION` is below the second refuses the store.

        Raises:
            StoreUnavailable: the database cannot be reached.
        """

        async def read(conn: Any) -> tuple[int, int]:
            table = await conn.fetchval("SELECT to_regclass($1)", f"{self.schema}.schema_version")
            return (0, 0) if table is None else await schema_state(conn, self.schema)

        return await self._direct("read the schema version", read)

    async def close(self) -> None:
        """Close the pool (a later call opens a new one)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresConversations:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- every statement goes through here -------------------------------------------------
    async def _call(self, what: str, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn`` on a pooled connection; a pooled connection found dead (the server
        restarted since) is tried once more on a fresh one (every statement here can be run
        twice), then the step fails, retryably. A database that cannot be reached at all fails
        at once: the step's own retries wait between tries, this does not."""
        for attempt in (1, 2):
            pooled = self._pool is not None and self._loop is asyncio.get_running_loop()
            try:
                pool = await self._ready_pool()
                async with pool.acquire(timeout=self.connect_timeout) as conn:
                    return await fn(conn)
            except TooNew as err:
                raise self._unavailable(what, err) from None
            except _lost_connection() as err:
                if self._pool is not None:
                    await self._pool.expire_connections()
                if attempt == 2 or not pooled:
                    raise self._unavailable(what, err) from None
            except asyncpg.PostgresError as err:
                raise self._unavailable(what, err) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _direct(self, what: str, fn: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``fn`` on a connection of its own, without migrating (what ``doctor`` reads)."""
        try:
            conn = await asyncpg.connect(self.dsn, timeout=self.connect_timeout)
        except (*_lost_connection(), asyncpg.PostgresError) as err:
            raise self._unavailable(what, err) from None
        try:
            return await fn(conn)
        except (*_lost_connection(), asyncpg.PostgresError) as err:
            raise self._unavailable(what, err) from None
        finally:
            await conn.close()

    def _unavailable(self, what: str, err: BaseException) -> StoreUnavailable:
        if isinstance(err, TooNew):
            fix = (
                f"the database's schema is version {err.version}, which this duraguard (schema "
                f"{SCHEMA_VERSION}) cannot use: upgrade duraguard on this worker (a newer "
                "worker migrated it)"
            )
        elif isinstance(err, asyncpg.exceptions.InvalidAuthorizationSpecificationError):
            fix = f"the server refused the login ({err}): check the user and password in the DSN"
        elif isinstance(err, asyncpg.exceptions.InvalidCatalogNameError):
            fix = f"{err}: create the database, or name an existing one in the DSN"
        elif isinstance(err, asyncpg.exceptions.InsufficientPrivilegeError):
            fix = f"{err}: grant the user CREATE on the database (or create schema {self.schema!r})"
        else:
            kind = type(err).__name__
            fix = (
                f"{kind}: {err or 'no answer'}; check that PostgreSQL runs and that this "
                f"worker reaches it (the step is retried)"
            )
        return StoreUnavailable(f"cannot {what} in the conversation store {self.where}: {fix}")

    # -- the store ------------------------------------------------------------------------
    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        body = await self._encode(messages)
        s = self.schema
        sql = (
            f"INSERT INTO {s}.steps (conversation, step, total, body) SELECT $1, $2, CASE WHEN "
            f"$2 = 0 THEN $3::bigint ELSE (SELECT p.total + $3 FROM {s}.steps p WHERE "
            "p.conversation = $1 AND p.step = $2 - 1) END, $4 ON CONFLICT (conversation, step) "
            "DO NOTHING"
        )

        async def write(conn: Any) -> bool:
            return bool(
                await conn.execute(sql, conversation, step, len(messages), body) == "INSERT 0 1"
            )

        if await self._call("append to a conversation", write):
            self._keep(conversation, step, messages)

    async def _put_result(self, run_id: str, call_id: str, attempt: int, raw: bytes) -> None:
        sql = (
            f"INSERT INTO {self.schema}.results (run_id, call_id, attempt, body) VALUES "
            "($1, $2, $3, $4) ON CONFLICT (run_id, call_id, attempt) DO NOTHING"
        )

        async def write(conn: Any) -> None:
            await conn.execute(sql, run_id, call_id, attempt, raw)

        await self._call("keep a tool result", write)

    async def _result_rows(self, run_id: str, call_ids: list[str]) -> list[tuple[str, bytes]]:
        sql = (
            f"SELECT call_id, body FROM {self.schema}.results WHERE run_id = $1 AND "
            "call_id = ANY($2::text[])"
        )

        async def rows(conn: Any) -> list[tuple[str, bytes]]:
            return [(r[0], bytes(r[1])) for r in await conn.fetch(sql, run_id, call_ids)]

        return await self._call("read kept tool results", rows)

    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]:
        sql = f"SELECT step, body FROM {self.schema}.steps WHERE conversation = $1 ORDER BY step"

        async def rows(conn: Any) -> list[tuple[int, bytes]]:
            return [(r[0], bytes(r[1])) for r in await conn.fetch(sql, conversation)]

        return await self._call("read a conversation", rows)

    async def _ends(self, conversation: str, last: int) -> tuple[int, list[int]] | None:
        sql = (
            f"SELECT step, total FROM {self.schema}.steps WHERE conversation = $1 "
            "ORDER BY step DESC LIMIT $2"
        )

        async def ends(conn: Any) -> tuple[int, list[int]] | None:
            rows = await conn.fetch(sql, conversation, last + 1)
            return picked_ends(((r[0], r[1]) for r in rows), last)

        return await self._call("read a conversation", ends)

    async def _bodies(self, conversation: str, steps: Sequence[int]) -> dict[int, bytes]:
        sql = (
            f"SELECT step, body FROM {self.schema}.steps WHERE conversation = $1 AND "
            "step = ANY($2::integer[])"
        )

        async def bodies(conn: Any) -> dict[int, bytes]:
            return {r[0]: bytes(r[1]) for r in await conn.fetch(sql, conversation, list(steps))}

        return await self._call("read a conversation", bodies)

    async def prune(self, older_than: float) -> int:
        """Delete the conversations whose latest step was written more than ``older_than``
        seconds ago, and the tool results kept that long; how many steps went. Prune only past
        the longest a run of yours lives: a run still going whose conversation was pruned fails
        its next model step (``ConversationLost``); a result pruned is sent again in full."""
        if older_than < 0:
            raise ValueError(f"older_than must be 0 or more seconds, not {older_than!r}")
        s = self.schema
        sql = (
            f"DELETE FROM {s}.steps WHERE conversation IN (SELECT conversation FROM {s}.steps "
            "GROUP BY conversation HAVING max(written) < now() - make_interval(secs => $1))"
        )
        results = f"DELETE FROM {s}.results WHERE written < now() - make_interval(secs => $1)"

        async def delete(conn: Any) -> int:
            async with conn.transaction():
                done = await conn.execute(sql, float(older_than))
                await conn.execute(results, float(older_than))
            return int(done.split()[-1])

        return await self._call("prune old conversations", delete)


def is_postgres_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL database (``postgres://`` or ``postgresql://``)."""
    return value.startswith(("postgresql://", "postgres://"))


__all__ = ["SCHEMA_VERSION", "PostgresConversations", "StoreUnavailable", "is_postgres_url"]
