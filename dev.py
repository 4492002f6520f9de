"""Set up a virtual environment and run the demo, the tests or the benchmarks.

Usage (Python 3.11 and nothing else needed):

    python3 dev.py demo        # embedded Temporal dev server, a worker, every verdict
    python3 dev.py test        # the whole test suite on real Temporal servers
    python3 dev.py bench       # benchmarks/ side by side
    python3 dev.py check       # ruff and mypy

Each command creates ``.venv`` (once) and installs the project with its
development extras, then runs inside it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".duraguard-installed"


def _ensure_env() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"duraguard needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and PY.exists():
        return
    if not PY.exists():
        print("dev.py: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing duraguard and its development tools into .venv", flush=True)
    subprocess.run(
        [str(PY), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-e", f"{ROOT}[dev]"],
        check=True,
    )
    STAMP.write_text(wanted)


def _run(*argv: str) -> int:
    """Run ``argv`` in .venv's environment until it ends. Ctrl-C and SIGTERM go to it, and this
    waits for it to stop: the demo then stops its worker and dev server before it exits."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
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
        return _run(str(PY), "-m", "pytest", *rest)
    if command == "bench":
        # measured.py runs overhead, cpu, concurrency, long_session and policy in one run;
        # the efficacy benchmarks, the fleet (worker processes, PostgreSQL) and
        # the comparison with a plain Temporal loop (at_scale) stand alone. Modules starting with "_" are their helpers.
        bench = ROOT / "benchmarks"
        code = _run(str(PY), str(bench / "measured.py"), *rest)  # e.g. --quick
        for script in (
            "content_checks.py", "injection.py", "fleet.py", "at_scale.py", "mcp_sessions.py",
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
