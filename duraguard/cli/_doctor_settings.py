"""What ``duraguard doctor`` reports, and the checks of duraguard's own settings.

A :class:`Check` is one line of the report; a :class:`Deployment` is what the checks look at
(from the worker's plugin or from the environment). The Temporal checks and the command itself
are in :mod:`duraguard.cli._doctor`; here are the checks that need no server: the approvers file,
the conversation store, the codec keys and the session key.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._approvers import ApproverKeys
from ..codec import CodecError
from ..conversations import MemoryConversations, SqliteConversations
from ..errors import ConfigurationError
from ..plugin import _session_key
from ..postgres import SCHEMA_VERSION, PostgresConversations, StoreUnavailable
from ._common import _run

Status = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Deployment:
    """What the checks look at, from the plugin or from the environment."""

    approvers: str | None = None
    approver_count: int | None = None
    search_attributes: bool = False
    store: Any = None
    store_error: str = ""
    sqlite: Path | None = None
    codec: Any = None
    session_key: bool = False
    plugin_error: str = ""


# -- duraguard's own settings --------------------------------------------------------------


def _approvers_check(d: Deployment) -> Check:
    if d.approvers:
        try:
            keys = ApproverKeys.from_file(d.approvers)
        except (ConfigurationError, OSError) as err:
            return Check(
                "approvers", "fail", f"{d.approvers}: {err}", "fix the file (see docs/inbox.md)"
            )
        return Check("approvers", "ok", f"{d.approvers}: {_approvers_named(keys)}")
    if d.approver_count is not None:
        return Check("approvers", "ok", f"the plugin's: {d.approver_count} approver(s)")
    return Check(
        "approvers",
        "warn",
        "no approvers file: every person's decision is refused (no public key to check it "
        "against), so a call that asks a person never runs",
        "give every worker DuraguardPlugin(approvers=FILE) and pass --approvers FILE here",
    )


def _approvers_named(keys: Any) -> str:
    roles = sorted(keys.roles()) if callable(getattr(keys, "roles", None)) else []
    who = ", ".join(a.name for a in keys)
    return f"{len(keys)} approver(s) ({who})" + (f", roles {', '.join(roles)}" if roles else "")


async def _store_check(d: Deployment) -> list[Check]:
    if d.store_error:
        return [Check("conversations", "fail", d.store_error, "fix DURAGUARD_CONVERSATIONS")]
    store = d.store
    if d.sqlite is not None:
        return [_sqlite_check(d.sqlite)]
    if store is None:
        return [Check("conversations", "skip", "none: each model step carries the conversation")]
    if isinstance(store, SqliteConversations):
        return [_sqlite_check(store.path)]
    if isinstance(store, MemoryConversations):
        return [
            Check(
                "conversations",
                "warn",
                "in memory: lost with the worker",
                "use SQLite or PostgreSQL",
            )
        ]
    if isinstance(store, PostgresConversations):
        return [await _postgres_check(store)]
    return [Check("conversations", "skip", f"{type(store).__name__}: not a store doctor knows")]


def _sqlite_check(path: Path) -> Check:
    folder, where = path.parent, f"SQLite {path}"
    fix = "set DURAGUARD_CONVERSATIONS to a file path (or a postgresql:// URL)"
    if path.is_dir():
        return Check("conversations", "fail", f"{where} is a folder", fix)
    if not path.exists() and not folder.is_dir():
        return Check(
            "conversations", "fail", f"{where}: no such folder", f"create {folder}, or {fix}"
        )
    writable = os.access(path if path.exists() else folder, os.W_OK)
    if not writable:
        return Check(
            "conversations",
            "fail",
            f"{where}: not writable by this user",
            "make it writable by the workers' user",
        )
    if path.exists():
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                db.execute("PRAGMA schema_version").fetchone()
        except sqlite3.Error as err:
            return Check(
                "conversations", "fail", f"{where}: {err}", "move the file aside; a new one is made"
            )
    return Check(
        "conversations",
        "ok",
        f"{where} writable (one machine: every worker of the task queue must run here)",
    )


async def _postgres_check(store: Any) -> Check:
    try:
        version, oldest = await store.schema_version()
    except StoreUnavailable as err:
        return Check(
            "conversations", "fail", str(err), "start PostgreSQL, or fix DURAGUARD_CONVERSATIONS"
        )
    where = f"PostgreSQL {store.where}, schema {store.schema}"
    if oldest > SCHEMA_VERSION:
        return Check(
            "conversations",
            "fail",
            f"{where} at version {version}, which this duraguard (schema {SCHEMA_VERSION}) "
            "cannot use",
            "upgrade duraguard here and on every worker",
        )
    if version < SCHEMA_VERSION:
        done = "not created yet" if version == 0 else f"at version {version}"
        return Check(
            "conversations",
            "ok",
            f"{where} {done}: the first worker migrates it to {SCHEMA_VERSION}",
        )
    return Check("conversations", "ok", f"{where} at version {version}")


def _codec_check(d: Deployment) -> list[Check]:
    if isinstance(d.codec, CodecError):
        return [
            Check(
                "codec keys",
                "fail",
                str(d.codec),
                "fix DURAGUARD_CODEC_KEYS (`duraguard codec-keygen k1`)",
            )
        ]
    if d.codec is None:
        return [
            Check(
                "codec keys",
                "warn",
                "no codec: payloads and stored conversations are kept in plain text",
                "set DURAGUARD_CODEC_KEYS on every worker, client and the codec endpoint",
            )
        ]
    return [_round_trip(d.codec)]


def _round_trip(codec: Any) -> Check:
    from temporalio.api.common.v1 import Payload

    sample = Payload(metadata={"encoding": b"json/plain"}, data=b'"duraguard doctor"')
    try:
        (sealed,) = _run(codec.encode([sample]))
        (opened,) = _run(codec.decode([sealed]))
    except Exception as err:
        return Check(
            "codec keys", "fail", f"the codec cannot round-trip a payload: {err}", "fix the keys"
        )
    if opened != sample or sealed.data == sample.data:
        return Check(
            "codec keys", "fail", "the codec does not encrypt", "use duraguard.codec.AesGcmCodec"
        )
    kid = getattr(codec, "key_id", None)
    return Check("codec keys", "ok", f"encrypting under {kid!r}" if kid else type(codec).__name__)


def _session_key_check(d: Deployment) -> Check:
    try:
        _session_key(None)  # what a worker makes of DURAGUARD_SESSION_KEY
    except ConfigurationError as err:
        return Check("session key", "fail", f"DURAGUARD_SESSION_KEY: {err}", "set a longer one")
    if d.session_key:
        return Check("session key", "ok", "set (every worker needs the same one)")
    return Check(
        "session key",
        "warn",
        "not set: a run that continues-as-new cannot carry its session (MissingSessionKey)",
        "set DURAGUARD_SESSION_KEY (the same on every worker): "
        "python -c 'import secrets; print(secrets.token_hex(32))'",
    )


__all__: list[str] = [
    "Check",
    "Deployment",
    "Status",
    "_approvers_check",
    "_codec_check",
    "_session_key_check",
    "_store_check",
]
