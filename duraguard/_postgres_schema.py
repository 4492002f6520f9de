"""The PostgreSQL store's schema: its migrations, and reading which version a database holds."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

SCHEMA_VERSION = 3
"""The newest schema this duraguard writes."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    # (the oldest SCHEMA_VERSION whose code still works on the schema after it, statements)
    (1, (  # 1: the steps, as the SQLite store keeps them
        "CREATE TABLE IF NOT EXISTS {s}.steps (conversation text NOT NULL, step integer NOT "
        "NULL CHECK (step >= 0), total bigint, body bytea NOT NULL, PRIMARY KEY "
        "(conversation, step))",
    )),
    (1, (  # 2: when each step was written, so old conversations can be pruned (additive)
        "ALTER TABLE {s}.steps ADD COLUMN IF NOT EXISTS written timestamptz NOT NULL DEFAULT now()",
        "CREATE INDEX IF NOT EXISTS steps_written ON {s}.steps (written)",
    )),
    (1, (  # 3: tool results kept for the model step that follows (additive)
        "CREATE TABLE IF NOT EXISTS {s}.results (run_id text NOT NULL, call_id text NOT "
        "NULL, attempt integer NOT NULL, body bytea NOT NULL, written timestamptz NOT NULL "
        "DEFAULT now(), PRIMARY KEY (run_id, call_id, attempt))",
        "CREATE INDEX IF NOT EXISTS results_written ON {s}.results (written)",
    )),
)  # fmt: skip
"""Each migration says which earlier duraguard can still use the schema after it: an additive
one (a column with a default, an index) keeps version 1 workers working, so a rolling upgrade
can migrate while older workers still run; one that is not refuses them (retryably)."""


def where(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or "localhost"
        return f"{parts.username + '@' if parts.username else ''}{host}:{parts.port or 5432}{parts.path}"
    except ValueError:
        return "(unparsable DSN)"


async def schema_state(conn: Any, schema: str) -> tuple[int, int]:
    row = await conn.fetchrow(
        f"SELECT coalesce(max(version), 0), coalesce(max(oldest_reader), 0) FROM "
        f"{schema}.schema_version"
    )
    return int(row[0]), int(row[1])


class TooNew(Exception):
    """The database was migrated past what this duraguard can use."""

    def __init__(self, version: int) -> None:
        super().__init__(f"schema version {version}")
        self.version = version


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "TooNew", "schema_state", "where"]
