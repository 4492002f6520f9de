"""The README's first command: the demo runs every scenario end to end and exits cleanly."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def _demo(tmp_path: Path, *flags: str) -> tuple[int | None, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "duraguard",
        "demo",
        "--state",
        str(tmp_path / "demo"),
        *flags,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out_bytes, _ = await asyncio.wait_for(proc.communicate(), timeout=110)
    return proc.returncode, out_bytes.decode()


# Every scenario's verdicts, --keep and the tour: tests/test_tour.py (one demo run walks it all).


async def test_demo_help_says_what_it_runs(tmp_path: Path) -> None:
    code, out = await _demo(tmp_path, "--help")
    assert code == 0, out
    assert "seven tickets" in " ".join(out.split())
    assert "support-42" in out and "--keep" in out and "--port" in out


async def test_demo_with_encrypt_leaves_no_plaintext_payload_in_history(tmp_path: Path) -> None:
    code, out = await _demo(tmp_path, "--encrypt")
    assert code == 0, out
    assert "payloads encrypted (AES-GCM); the UI decodes them at http://127.0.0.1:" in out
    sealed, total = re.search(r"history payloads encrypted: (\d+) of (\d+)", out).groups()
    assert int(total) > 20 and sealed == total
    assert "approve for c1 on support-manager-refund" in out and "accepted" in out
    # the key the CLI needs to read these histories is printed, ready to paste
    assert re.search(r"export DURAGUARD_CODEC_KEYS=demo:[A-Za-z0-9+/=]{40,}", out), out
