"""``duraguard demo``: runs the support-desk demo of a source checkout (``workflows/demo.py``).

The reference application (``workflows/``, ``activities/``) is not part of the wheel, so the demo
runs from a clone: ``python3 dev.py demo``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    root = Path(__file__).resolve().parent.parent
    if (root / "workflows" / "demo.py").exists() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        demo = importlib.import_module("workflows.demo")
    except ModuleNotFoundError as err:
        print(
            f"duraguard demo: the reference application is not here ({err.name} is missing); "
            "it ships with the source, not the wheel. Clone the repository and run "
            "`python3 dev.py demo`.",
            file=sys.stderr,
        )
        return 2
    return int(demo.main(list(argv or [])))
