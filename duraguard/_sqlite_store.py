"""The SQLite conversation store: one file on one machine (the default)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import temporalio.converter

from ._conversation_store import ENV, _Encoded, picked_ends
from ._kept_results import KEPT_IN_MEMORY
from ._wire import Message
from .errors import ConfigurationError


def _migrate(db: sqlite3.Connection) -> None:
    """Create the tables, or bring a file from an earlier version up to date, in one
    transaction: workers opening one file at once migrate it once, and a crash leaves it whole."""
    with _writing(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS steps (conversation TEXT NOT NULL, step INTEGER "
            "NOT NULL, body BLOB NOT NULL, PRIMARY KEY (conversation, step))"
        )
        columns = {row[1] for row in db.execute("PRAGMA table_info(steps)")}
        if "total" not in columns:
            # Messages in steps 0..step: a turn then reads only the latest steps.
            db.execute("ALTER TABLE steps ADD COLUMN total INTEGER")
        db.execute("CREATE INDEX IF NOT EXISTS steps_total ON steps (conversation, step, total)")
        if "written" not in columns:
            # When a step was written (julianday), for prune(): a file from before this column
            # counts its steps as written now.
            db.execute("ALTER TABLE steps ADD COLUMN written REAL")
            db.execute("UPDATE steps SET written = julianday('now') WHERE written IS NULL")
        db.execute("CREATE INDEX IF NOT EXISTS steps_written ON steps (conversation, written)")
        kept = {row[1] for row in db.execute("PRAGMA table_info(results)")}
        if kept and "written" not in kept:
            db.execute("DROP TABLE results")  # kept results are a cache: none is lost
        db.execute(
            "CREATE TABLE IF NOT EXISTS results (run_id TEXT NOT NULL, call_id TEXT NOT NULL, "
            "attempt INTEGER NOT NULL, body BLOB NOT NULL, written REAL NOT NULL DEFAULT "
            "(julianday('now')), PRIMARY KEY (run_id, call_id, attempt))"
        )
        db.execute("CREATE INDEX IF NOT EXISTS results_written ON results (written)")


@contextlib.contextmanager
def _writing(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE``), rolled back on any error, the connection
    never left inside it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


class SqliteConversations(_Encoded):
    """A store in a SQLite file (one machine); blocking I/O runs off the event loop."""

    def __init__(
        self,
        path: str | Path | None = None,
        converter: temporalio.converter.DataConverter | None = None,
        *,
        kept_in_memory: int = KEPT_IN_MEMORY,
    ) -> None:
        super().__init__(converter, kept_in_memory)
        chosen = path or os.environ.get(ENV) or Path.home() / ".duraguard" / "conversations.db"
        self.path = Path(chosen)
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _migrate(self._db())
        except (OSError, sqlite3.Error) as err:
            raise ConfigurationError(
                f"cannot open the conversation store {self.path}: {err}; set {ENV} to a "
                "writable file, or pass DuraguardPlugin(conversations=...)"
            ) from None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        """This thread's connection (opened once: opening costs more than most reads)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            self._local.db = db
        return db

    async def append(self, conversation: str, step: int, messages: Sequence[Message]) -> None:
        body = await self._encode(messages)

        n = len(messages)

        def write() -> bool:
            with self._lock:
                # The total counts the messages of steps 0..step: NULL where the step before
                # is missing or was not counted (a turn then reads the whole conversation).
                done = self._db().execute(
                    "INSERT OR IGNORE INTO steps (conversation, step, body, total, written) "
                    "SELECT ?, ?, ?, CASE WHEN ? = 0 THEN ? ELSE (SELECT p.total + ? FROM steps "
                    "p WHERE p.conversation = ? AND p.step = ?) END, julianday('now')",
                    (conversation, step, body, step, n, n, conversation, step - 1),
                )
                return done.rowcount == 1

        if await asyncio.to_thread(write):
            self._keep(conversation, step, messages)

    async def _put_result(self, run_id: str, call_id: str, attempt: int, raw: bytes) -> None:
        def write() -> None:
            with self._lock:
                db = self._db()
                # A result lost in a power cut costs the model step a resend, not a message:
                # it is written without the wait for the disk a conversation's step takes.
                db.execute("PRAGMA synchronous=NORMAL")
                try:
                    db.execute(
                        "INSERT OR IGNORE INTO results (run_id, call_id, attempt, body) "
                        "VALUES (?, ?, ?, ?)",
                        (run_id, call_id, attempt, raw),
                    )
                finally:
                    db.execute("PRAGMA synchronous=FULL")

        await asyncio.to_thread(write)

    async def prune(self, older_than: float) -> int:
        """Delete the conversations whose latest step was written more than ``older_than``
        seconds ago, and the tool results kept that long; how many steps went. Prune only past
        the longest a run of yours lives: a run still going whose conversation was pruned fails
        its next model step (``ConversationLost``); a result pruned is sent again in full. The
        file does not shrink until it is vacuumed; its freed pages are written again first."""
        if older_than < 0:
            raise ValueError(f"older_than must be 0 or more seconds, not {older_than!r}")

        def delete() -> int:
            with self._lock:
                db = self._db()
                with _writing(db):
                    # Steps a worker of an earlier version wrote carry no date: dated now, so
                    # the conversation it still appends to does not look idle.
                    db.execute("UPDATE steps SET written = julianday('now') WHERE written IS NULL")
                    done = db.execute(
                        "DELETE FROM steps WHERE conversation IN (SELECT conversation FROM steps "
                        "GROUP BY conversation HAVING max(written) < julianday('now') - ? / "
                        "86400.0)",
                        (float(older_than),),
                    ).rowcount
                    db.execute(
                        "DELETE FROM results WHERE written < julianday('now') - ? / 86400.0",
                        (float(older_than),),
                    )
                return done

        return await asyncio.to_thread(delete)

    async def prune_results(self, older_than: float) -> int:
        """Delete the tool results kept more than ``older_than`` seconds ago (a model step that
        would have read one is sent it in full); how many went. :meth:`prune` deletes old
        conversations too."""

        def delete() -> int:
            with self._lock:
                done = self._db().execute(
                    "DELETE FROM results WHERE written < julianday('now') - ? / 86400.0",
                    (float(older_than),),
                )
                return done.rowcount

        return await asyncio.to_thread(delete)

    async def _result_rows(self, run_id: str, call_ids: list[str]) -> list[tuple[str, bytes]]:
        def rows() -> list[tuple[str, bytes]]:
            marks = ",".join("?" * len(call_ids))
            return list(
                self._db().execute(
                    f"SELECT call_id, body FROM results WHERE run_id = ? AND call_id IN ({marks})",
                    (run_id, *call_ids),
                )
            )

        return await asyncio.to_thread(rows)

    async def _steps(self, conversation: str) -> list[tuple[int, bytes]]:
        def rows() -> list[tuple[int, bytes]]:
            return list(
                self._db().execute(
                    "SELECT step, body FROM steps WHERE conversation = ? ORDER BY step",
                    (conversation,),
                )
            )

        return await asyncio.to_thread(rows)

    async def _ends(self, conversation: str, last: int) -> tuple[int, list[int]] | None:
        def ends() -> tuple[int, list[int]] | None:
            # Counted steps, newest first, read from the index alone (no message is read).
            rows = self._db().execute(
                "SELECT step, total FROM steps WHERE conversation = ? ORDER BY step DESC LIMIT ?",
                (conversation, last + 1),
            )
            return picked_ends(rows, last)

        return await asyncio.to_thread(ends)

    async def _bodies(self, conversation: str, steps: Sequence[int]) -> dict[int, bytes]:
        def bodies() -> dict[int, bytes]:
            marks = ",".join("?" * len(steps))
            rows = self._db().execute(
                f"SELECT step, body FROM steps WHERE conversation = ? AND step IN ({marks})",
                (conversation, *steps),
            )
            return {int(step): body for step, body in rows}

        return await asyncio.to_thread(bodies)
