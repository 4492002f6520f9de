"""The README's tour, walked as printed (issue 25, items 3, 4 and 6): ``demo --keep`` runs every
scenario, leaves ``support-42`` waiting and prints the commands the README prints; those
commands, typed in bash with ``.venv`` active, list the parked call, approve it with the demo's
key and audit the run; the Web UI's User Metadata tab shows the run's verdicts; SIGTERM stops
the demo and the dev server it started."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from ._readme import ROOT, bash, block

pytestmark = pytest.mark.timeout(300)

STEPS_END = re.compile(r"^Web UI: (\S+) ")


def test_dev_py_demo_runs_the_duraguard_demo_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python3 dev.py demo --keep` (the README's command) is `python -m duraguard demo --keep`
    in .venv, which the tour below runs."""
    assert block("tour-keep").commands() == ["python3 dev.py demo --keep"]
    spec = importlib.util.spec_from_file_location("dev_py", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr(dev, "_ensure_env", lambda: None)

    def run(*argv: str) -> int:
        ran.append(argv)
        return 0

    monkeypatch.setattr(dev, "_run", run)
    assert dev.main(["demo", "--keep"]) == 0
    assert ran == [(str(dev.PY), "-m", "duraguard", "demo", "--keep")]


def test_dev_py_passes_sigterm_to_what_it_runs_and_waits_for_it(tmp_path: Path) -> None:
    """`kill` of `python3 dev.py demo` reaches the demo, which stops its server, and dev.py
    waits for that: nothing is left running."""
    import subprocess

    child = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('cleaned up', flush=True), sys.exit(7)))\n"
        "print('up', flush=True)\n"
        "time.sleep(60)\n"
    )
    wrapper = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import dev; "
        f"sys.exit(dev._run(sys.executable, '-c', {child!r}))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", wrapper], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7
    assert proc.stdout.read().strip() == "cleaned up"


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found


def _descendants(pid: int) -> list[int]:
    """``pid``'s children, theirs, and so on (the dev server runs under its launcher)."""
    found, todo = [], [pid]
    while todo:
        kids = [c for p in todo if Path(f"/proc/{p}").exists() for c in _children(p)]
        found += kids
        todo = kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def _lines_until(
    stream: asyncio.StreamReader, seen: list[str], pattern: re.Pattern[str]
) -> re.Match[str]:
    while True:
        line = (await asyncio.wait_for(stream.readline(), 200)).decode()
        if not line:
            raise AssertionError("the demo ended before it was ready:\n" + "".join(seen))
        seen.append(line)
        found = pattern.search(line)
        if found:
            return found


async def test_the_tour_is_walkable_as_the_readme_prints_it(tmp_path: Path) -> None:
    # A checkout's root as a person has it: .venv (this one) and the demo's state beside it.
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = {k: v for k, v in os.environ.items() if k not in ("TEMPORAL_ADDRESS", "VIRTUAL_ENV")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = await asyncio.create_subprocess_exec(
        # --port 0: never compete for 7233 with someone's server; the demo then prints the
        # `export TEMPORAL_ADDRESS=...` line the README tells you to run, and so does this.
        str(tmp_path / ".venv" / "bin" / "python"), "-m", "duraguard", "demo", "--keep",
        "--state", ".duraguard/demo", "--port", "0",
        cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        ui = (await _lines_until(proc.stdout, seen, STEPS_END)).group(1)
        out = "".join(seen)
        _every_scenario_ran(out)
        # What it printed is what the README prints (plus the address, if 7233 was taken).
        steps = out[out.index("In another terminal") :].splitlines()
        printed = [line.split("  #", 1)[0].strip() for line in steps if line.startswith("  ")]
        exports = [c for c in printed if c.startswith("export TEMPORAL_ADDRESS=")]
        assert len(exports) == 1  # 7233 was not asked for: the line to paste is printed
        assert [c for c in printed if c not in exports] == block("tour-approve").commands()
        script = "set -e\n" + "\n".join(
            f"echo '>>> {c}'\n{c}" if not c.startswith(("source", "export")) else c
            for c in [printed[0], *exports, *block("tour-approve").commands()[1:]]
        )
        code, said = await bash(
            script, tmp_path, {k: v for k, v in env.items() if k != "PYTHONPATH"}
        )
        assert code == 0, said
        parts = dict(p.split("\n", 1) for p in said.split(">>> ")[1:])
        pending = parts["duraguard pending"]
        assert re.search(r"support-42\s+c3\s+refund_card\s+\{\"order_id\":\"A4\"", pending), pending
        assert (
            "approve for c3 on support-42: accepted"
            in parts["duraguard approve support-42 c3 --key .duraguard/demo/alice.pem"]
        )
        audit = parts["duraguard audit support-42"]
        assert re.search(r"3\s+c3\s+refund_card\s+tool-args\s+approve\s+policy", audit), audit
        assert re.search(
            r"c3\s+refund_card\s+tool-args\s+allow\s+person \(decision\)\s+complete\s+alice", audit
        )
        await _web_ui_shows_the_verdicts(ui, tmp_path)
        # SIGTERM, as a process manager stops it: the demo and its dev server both end.
        server = [
            c for c in _children(proc.pid) if "temporal" in Path(f"/proc/{c}/cmdline").read_text()
        ]
        assert len(server) == 1
        proc.send_signal(signal.SIGTERM)
        rest = (await asyncio.wait_for(proc.stdout.read(), 60)).decode()
        assert await asyncio.wait_for(proc.wait(), 60) == 0, rest
        for _ in range(100):
            if not _alive(server[0]):
                break
            await asyncio.sleep(0.1)
        assert not _alive(server[0]), "the demo's dev server outlived it"
    finally:
        if proc.returncode is None:
            # A failed walk: the demo, killed, cannot stop its dev server; stop that too (a
            # server left behind by each failed run kept listening).
            leftover = _descendants(proc.pid)
            proc.kill()
            await proc.wait()
            for child in leftover:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)


def _every_scenario_ran(out: str) -> None:
    """The demo's own account: each scenario's verdicts, once each, and what reached the desk."""
    summary = out[out.index("Summary") : out.index("--keep:")]
    lines = {line.split()[0]: line for line in summary.splitlines()[2:] if line.strip()}
    assert "deny:schema" in lines["schema-fix"]
    assert "mask:pii" in lines["mask-card"]
    assert "guardrail" in lines["moderation-halt"] and "halt:moderation" in lines["moderation-halt"]
    assert "allow:person" in lines["manager-refund"] and "approve:policy" in lines["manager-refund"]
    assert "approve:policy" in lines["expired-ask"] and "allow:person" not in lines["expired-ask"]
    assert "observe:pii-watch" in lines["observe-email"]
    observe = out[out.index("▶ observe-email") : out.index("▶ manager-refund")]
    assert observe.count("observe  pii-watch (pii)") == 1, observe  # printed once
    db = out[out.index("In the support desk database") : out.index("Summary")]
    assert "[CARD]" in db and "4111 1111 1111 1111" not in db
    assert "'order_id': 'A2', 'amount': 350.0" in db and "'order_id': 'A4'" not in db


async def _web_ui_shows_the_verdicts(url: str, tmp_path: Path) -> None:
    """The run's page, the User Metadata tab: the verdict table the README points at."""
    from ._browser import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run installs it")
        return  # the rest of the tour is still walked
    artifacts = os.environ.get("DURAGUARD_ARTIFACTS")
    shots = Path(artifacts) / "tour" if artifacts else tmp_path / "shots"

    def look() -> str:
        with Chromium(binary, window=(1400, 1000)) as browser:
            browser.goto(url)
            page = browser.wait_for_text(lambda t: "support-42" in t, timeout=30)
            if not browser.click_text("User Metadata"):
                raise AssertionError(f"no User Metadata tab on {url}:\n{page}")
            browser.wait_for_text(
                lambda _: "duraguard verdicts" in browser.frames_text(), timeout=30
            )
            browser.screenshot(shots / "support-42-user-metadata.png")
            return browser.frames_text()

    details: Any = await asyncio.to_thread(look)
    assert re.search(r"c3\s+refund_card\s+tool-args\s+approve\s+policy", details), details
    assert re.search(r"c3\s+refund_card\s+tool-args\s+allow\s+person", details), details
