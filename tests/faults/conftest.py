"""The fault suite's tallies (runs tried / effects lost / doubled / runs stuck), carried on each
case's reports: the root conftest prints their table at the end of the run, in whichever process
runs the session (pytest-xdist's controller loads no conftest of a folder below ``tests``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from ._files import files  # noqa: F401  (the fixture, for every module here)
from ._tally import MEASURED, TALLY


@pytest.fixture(autouse=True)
def _tallied(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each tally a case measured, on its reports (pytest-xdist sends them to the controller)."""
    before = len(MEASURED)
    yield
    for t in MEASURED[before:]:
        request.node.user_properties.append((TALLY, dataclasses.astuple(t)))
