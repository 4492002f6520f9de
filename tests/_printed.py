"""Lines a test prints for the record, shown at the end of the run whichever test process ran
it: pytest-xdist's workers do not show a test's own output, but their reports carry the test's
``user_properties`` to the controller, which prints them (``conftest.pytest_terminal_summary``)."""

from __future__ import annotations

from typing import Any

import pytest

PRINTED = "printed"
"""A test's ``user_properties`` entry printed at the end of the run (:func:`printed`): a report
carries it from whichever test process ran the test."""


def printed(request: pytest.FixtureRequest, line: str) -> None:
    """Print ``line`` for the record at the end of the run, under "measured"."""
    request.node.user_properties.append((PRINTED, line))


def reported(terminalreporter: Any, name: str) -> list[Any]:
    """The values of the ``user_properties`` entries called ``name`` of every test's reports,
    each test's once (its later reports carry its earlier entries)."""
    seen: dict[str, list[Any]] = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            props = [v for k, v in getattr(r, "user_properties", ()) if k == name]
            key = str(getattr(r, "nodeid", ""))
            if props and len(props) > len(seen.get(key, ())):
                seen[key] = props
    return [v for props in seen.values() for v in props]
