"""What tests print for the record reaches the end of the run from whichever process ran them:
the root conftest prints the fault suite's table and the measured lines from the reports'
``user_properties`` (pytest-xdist's controller runs no test and loads no conftest below
``tests/``, so a hook there would print nothing)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from . import conftest
from ._printed import PRINTED, reported
from .faults._tally import TALLY


class _Reporter:
    def __init__(self, stats: dict[str, list[Any]]) -> None:
        self.stats = stats
        self.out: list[str] = []

    def section(self, title: str) -> None:
        self.out.append(f"== {title}")

    def write_line(self, line: str) -> None:
        self.out.append(line)


def _report(nodeid: str, when: str, *props: tuple[str, Any]) -> Any:
    return SimpleNamespace(nodeid=nodeid, when=when, user_properties=list(props))


def test_each_test_s_entries_are_read_once_from_its_reports() -> None:
    a = (TALLY, ["tool, before its effect", 3, 0, 0, 0])
    b = (PRINTED, "loop 10 calls: 101 events")
    stats = {
        "passed": [_report("t.py::a", "call"), _report("t.py::b", "call", b)],
        "": [_report("t.py::a", "teardown", a), _report("t.py::b", "teardown", b)],
    }
    assert reported(_Reporter(stats), TALLY) == [a[1]]
    assert reported(_Reporter(stats), PRINTED) == [b[1]]


def test_the_root_conftest_prints_the_fault_table_and_the_measured_lines() -> None:
    stats = {
        "": [
            _report("f.py::kill", "teardown", (TALLY, ["model step", 3, 0, 1, 0])),
            _report("m.py::loop", "teardown", (PRINTED, "loop 10 calls")),
        ]
    }
    reporter = _Reporter(stats)
    conftest.pytest_terminal_summary(reporter)
    assert reporter.out[0] == "== faults: worker and server killed with SIGKILL"
    assert reporter.out[1].split("\n")[1].split() == ["model", "step", "3", "0", "1", "0"]
    assert reporter.out[2:] == ["== measured", "loop 10 calls"]


def test_a_run_that_measured_nothing_prints_no_section() -> None:
    reporter = _Reporter({"passed": [_report("t.py::a", "call")]})
    conftest.pytest_terminal_summary(reporter)
    assert reporter.out == []
