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


async def test_demo_shows_every_verdict_and_exits_cleanly(tmp_path: Path) -> None:
    code, out = await _demo(tmp_path)
    assert code == 0, out
    summary = out[out.index("Summary") :]
    lines = {
        line.split()[0]: line
        for line in summary.splitlines()[2:]
        if line.strip() and not line.startswith("Audit")
    }
    assert "deny:schema" in lines["schema-fix"]
    assert "mask:pii" in lines["mask-card"]
    assert "guardrail" in lines["moderation-halt"] and "halt:moderation" in lines["moderation-halt"]
    assert "allow:person" in lines["manager-refund"] and "approve:policy" in lines["manager-refund"]
    assert "approve:policy" in lines["expired-ask"] and "allow:person" not in lines["expired-ask"]
    assert "approve for c1 on support-manager-refund" in out and "accepted" in out
    # the card never reached the email; the refund over the limit ran only after the yes
    assert (
        "[CARD]" in out
        and "4111 1111 1111 1111." not in out.split("In the support desk database")[1]
    )
    db_part = out.split("In the support desk database")[1]
    assert "'order_id': 'A2', 'amount': 350.0" in db_part
    assert "'order_id': 'A4'" not in db_part
    assert "Web UI http://127.0.0.1:" in out


async def test_demo_with_encrypt_leaves_no_plaintext_payload_in_history(tmp_path: Path) -> None:
    code, out = await _demo(tmp_path, "--encrypt")
    assert code == 0, out
    assert "payloads encrypted (AES-GCM); the UI decodes them at http://127.0.0.1:" in out
    sealed, total = re.search(r"history payloads encrypted: (\d+) of (\d+)", out).groups()
    assert int(total) > 20 and sealed == total
    assert "approve for c1 on support-manager-refund" in out and "accepted" in out
