"""The old home of :mod:`duraguard._admit` (who may reach a tool, worker side): its names resolve
here with a ``DeprecationWarning``. The admission guardrails themselves are
:mod:`duraguard.checks.admission`."""

from __future__ import annotations

import warnings
from typing import Any

from . import _admit


def __getattr__(name: str) -> Any:
    if name not in ("admit", "admit_many"):
        raise AttributeError(f"module 'duraguard.admission' has no attribute {name!r}")
    warnings.warn(
        f"duraguard.admission.{name} moved to duraguard._admit (worker side); the admission "
        "guardrails are duraguard.checks.admission",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_admit, name)
