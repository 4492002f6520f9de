"""Prints the fault suite's table (runs tried / effects lost / doubled / runs stuck) at the end
of every pytest run that ran a fault case."""

from __future__ import annotations

from typing import Any

from ._files import files  # noqa: F401  (the fixture, for every module here)
from ._tally import MEASURED, table


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MEASURED:
        terminalreporter.section("faults: worker and server killed with SIGKILL")
        terminalreporter.write_line(table(MEASURED))
