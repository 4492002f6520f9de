"""The reference support desk's tools (orders, refunds, email, page fetch) over a SQLite file.

Not part of the ``duraguard`` wheel: an application built on it, used by ``workflows/``, the
demo and the end-to-end tests.
"""

from .scripts import DEMO_SCRIPTS, demo_models
from .store import (
    DB_ENV,
    FIXTURE_PAGES,
    INJECTION_URL,
    list_outbox,
    list_refunds,
    open_db,
    resolve_db_path,
)
from .support import ToolRefused, current_idempotency_key, idempotency_key, support_tools

__all__ = [
    "DB_ENV",
    "DEMO_SCRIPTS",
    "FIXTURE_PAGES",
    "INJECTION_URL",
    "ToolRefused",
    "current_idempotency_key",
    "demo_models",
    "idempotency_key",
    "list_outbox",
    "list_refunds",
    "open_db",
    "resolve_db_path",
    "support_tools",
]
