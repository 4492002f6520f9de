"""Prints the fault suite's table (runs tried / effects lost / doubled / runs stuck) at the end
of every pytest run that ran a fault case, from whichever test process ran it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from .._printed import reported
from ._files import files  # noqa: F401  (the fixture, for every module here)
from ._tally import MEASURED, Tally, table

TALLY = "fault_tally"


@pytest.fixture(autouse=True)
def _tallied(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each tally a case measured, on its reports (pytest-xdist sends them to the controller)."""
    before = len(MEASURED)
    yield
    for t in MEASURED[before:]:
        request.node.user_properties.append((TALLY, dataclasses.astuple(t)))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tallies = [Tally(*t) for t in reported(terminalreporter, TALLY)]
    if tallies:
        terminalreporter.section("faults: worker and server killed with SIGKILL")
        terminalreporter.write_line(table(tallies))
