"""What each fault case measured, kept for the table pytest prints at the end of the run."""

from __future__ import annotations

from dataclasses import dataclass

HEADERS = ("fault", "runs tried", "effects lost", "effects doubled", "runs stuck")


@dataclass
class Tally:
    """One fault case: how many runs it tried and what went wrong with their effects."""

    fault: str
    tried: int = 0
    lost: int = 0
    doubled: int = 0
    stuck: int = 0

    def row(self) -> tuple[str, ...]:
        return (self.fault, str(self.tried), str(self.lost), str(self.doubled), str(self.stuck))


MEASURED: list[Tally] = []
TALLY = "fault_tally"
"""The ``user_properties`` entry a case's tally travels in (``tests/faults/conftest.py``)."""


def table(tallies: list[Tally]) -> str:
    """An aligned table of the tallies."""
    rows = [HEADERS, *(t.row() for t in tallies)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    return "\n".join(lines)
