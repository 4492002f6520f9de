"""Set up a virtual environment and run the demo, the tests or the benchmarks.

Usage (Python 3.11 and nothing else needed):

    python3 dev.py demo        # embedded Temporal dev server, a worker, every verdict
    python3 dev.py test        # the whole test suite on real Temporal servers
    python3 dev.py bench       # benchmarks/ side by side
    python3 dev.py check       # ruff and mypy

Each command creates ``.venv`` (once) and installs the project with its
development extras, then runs inside it. The Strands adapter's tests run in a second venv,
``.venv-strands`` (the ``strands`` extra pins ``mcp<2``, which the ``mcp`` extra cannot share a
venv with): ``test`` makes it too and runs those tests there (all of them with no arguments, or
the ones named).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
COVERAGE_FLOOR = 65
"""The least line coverage of duraguard/ the whole suite may report (``dev.py test``, in .venv);
a run of some tests only reports nothing (a part covers less). A part of the suite
(tests/checks and the core workflow tests, 1,701 tests) covers 67% of duraguard/; the whole
suite covers more, and the floor goes up once that is measured. Tests marked ``no_cover``
(CPU-bound checks covered by other tests too) are not traced: tracing doubles their time."""
TEST_WORKERS = 2
"""Test processes the whole suite runs in at most (one a core). One process keeps a core busy
about two thirds of the time (it waits on its servers the rest); two ran the suite in 17 min
against 20 on a quiet two-core machine. More would crowd the fault suites' own worker
processes."""
STRANDS_VENV = ROOT / ".venv-strands"
STRANDS_PY = STRANDS_VENV / BIN.name / "python"
STRANDS_TESTS = (
    "tests/adapters/test_strands.py",
    "tests/adapters/test_readme_strands.py",
    "samples/strands",
)
"""What runs in .venv-strands (skipped in .venv, where Strands is not installed)."""


def _ensure_env(where: Path = VENV, extras: str = "dev", *, aside: bool = False) -> None:
    """Make ``where`` (once) with duraguard[extras] installed. ``aside``: pip's output is kept
    and printed only if it fails (the venv is being made beside a test run's output)."""
    if sys.version_info < (3, 11):
        sys.exit(f"duraguard needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    py = where / BIN.name / "python"
    stamp = where / ".duraguard-installed"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted and py.exists():
        return
    if not py.exists():
        print(f"dev.py: creating {where.name}", flush=True)
        venv.EnvBuilder(with_pip=True).create(where)
    print(f"dev.py: installing duraguard[{extras}] into {where.name}", flush=True)
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[{extras}]"],
        capture_output=aside, text=True,
    )  # fmt: skip
    if pip.returncode:
        sys.stderr.write((pip.stdout or "") + (pip.stderr or ""))
        sys.exit(f"dev.py: installing duraguard[{extras}] into {where.name} failed (above)")
    stamp.write_text(wanted)


def _test(rest: list[str]) -> int:
    """pytest in .venv, and the Strands tests in .venv-strands: all with no paths given, else
    each path in the venv it needs (options go to both)."""

    def is_path(a: str) -> bool:
        return not a.startswith("-") and (ROOT / a.split("::")[0]).exists()

    def strands(a: str) -> bool:
        return any(a.split("::")[0].rstrip("/").startswith(t) for t in STRANDS_TESTS)

    paths = [a for a in rest if is_path(a)]
    options = [a for a in rest if a not in paths]
    mine = [p for p in paths if not strands(p)]
    theirs = [p for p in paths if strands(p)] if paths else list(STRANDS_TESTS)
    code = 0
    with ThreadPoolExecutor(1) as aside:
        # .venv-strands is made while the rest runs (pip waits on the disk and the index).
        strands_env = (
            aside.submit(_ensure_env, STRANDS_VENV, "strands,test", aside=True) if theirs else None
        )
        if mine or not paths:
            whole = [] if paths else [
                "--cov=duraguard", "--cov-report=term:skip-covered",
                f"--cov-fail-under={COVERAGE_FLOOR}", *_workers(options),
            ]  # fmt: skip
            code |= _run(str(PY), "-m", "pytest", *whole, *options, *mine)
    if strands_env is not None:
        strands_env.result()
        found = _run(str(STRANDS_PY), "-m", "pytest", *options, *theirs, bin_dir=STRANDS_PY.parent)
        code |= 0 if (found == 5 and not paths) else found  # 5: -k selected none of them
    return code


def _workers(options: list[str]) -> list[str]:
    """pytest-xdist's options for the whole suite: a test process per core, two at most
    (``DURAGUARD_TEST_WORKERS`` sets the number; 0 or 1 runs it in one process, as does an
    ``-n`` of the caller's). Each process has its own Temporal dev server and conversation file;
    a test file's tests stay in one process (its fixtures are made once)."""
    if any(o == "-n" or o.startswith(("-n", "--numprocesses")) for o in options):
        return []
    wanted = os.environ.get("DURAGUARD_TEST_WORKERS", "")
    n = int(wanted) if wanted.isdigit() else min(TEST_WORKERS, os.cpu_count() or 1)
    return ["-n", str(n), "--dist", "loadfile"] if n > 1 else []


def _run(*argv: str, bin_dir: Path = BIN) -> int:
    """Run ``argv`` in .venv's environment until it ends. Ctrl-C and SIGTERM go to it, and this
    waits for it to stop: the demo then stops its worker and dev server before it exits."""
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("PYTHONPATH", str(ROOT))
    proc = subprocess.Popen(list(argv), cwd=ROOT, env=env)

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "bench", "check", "setup"}:
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    _ensure_env()
    if command == "setup":
        return 0
    if command == "demo":
        return _run(str(PY), "-m", "duraguard", "demo", *rest)
    if command == "test":
        return _test(rest)
    if command == "bench":
        # measured.py runs overhead, cpu, concurrency, long_session and policy in one run;
        # the efficacy benchmarks, the fleet (worker processes, PostgreSQL) and
        # the comparison with a plain Temporal loop (at_scale) and a guarded call's parts
        # (step_cpu) stand alone. Modules starting with "_" are their helpers.
        bench = ROOT / "benchmarks"
        code = _run(str(PY), str(bench / "measured.py"), *rest)  # e.g. --quick
        for script in (
            "content_checks.py", "injection.py", "fleet.py", "at_scale.py", "step_cpu.py",
            "mcp_sessions.py",
        ):
            code |= _run(str(PY), str(bench / script))
        return code
    code = _run(
        str(PY), "-m", "ruff", "check",
        "duraguard", "tests", "workflows", "activities", "samples", "benchmarks",
    )
    code |= _run(
        str(PY), "-m", "ruff", "format", "--check", "-q",
        "duraguard", "workflows", "activities", "samples", "benchmarks",
    )
    return code | _run(str(PY), "-m", "mypy")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
