"""``duraguard demo --inbox``: the demo serves the approver's inbox and its manager-refund
scenario waits for a person's click there (here headless Chromium, with the demo's alice.pem)
instead of the scripted CLI approval; the demo also shows ``observe``, so every action
appears in one run of it. The screenshot of the waiting refund is the README's."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests._browser import Chromium
from tests.test_inbox_browser import Page, _chromium

pytestmark = pytest.mark.timeout(170)

ROOT = Path(__file__).resolve().parent.parent
WAITING = re.compile(r"waiting for you in the inbox:\S* open (\S+), load (\S+) \(alice")


async def _until(
    stream: asyncio.StreamReader, pattern: re.Pattern[str], seen: list[str]
) -> re.Match[str]:
    while True:
        line = (await asyncio.wait_for(stream.readline(), 90)).decode()
        if not line:
            raise AssertionError("the demo ended before:\n" + "".join(seen))
        seen.append(line)
        found = pattern.search(line)
        if found:
            return found


async def test_demo_with_inbox_waits_for_a_click_and_shows_every_action(
    tmp_path: Path,
) -> None:
    binary = _chromium()
    artifacts = os.environ.get("DURAGUARD_ARTIFACTS")
    shots = Path(artifacts) / "inbox" if artifacts else tmp_path / "shots"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "duraguard", "demo", "--inbox", "--inbox-port", "0", "--port", "0",
        "--state", str(tmp_path / "demo"),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        url, key = (await _until(proc.stdout, WAITING, seen)).groups()
        assert "duraguard approve" not in "".join(seen)  # no scripted approval
        browser = await asyncio.to_thread(Chromium(binary, window=(1280, 860)).__enter__)
        try:
            page = Page(browser, shots, "demo")
            await page.open(url)
            await page.wait(lambda t: "support-manager-refund-" in t)
            await page.click('#asks tr[data-call="c1"]')
            await page.wait(lambda t: "Verdicts so far" in t)
            await page.choose_file("#key-file", Path(key))
            await page.wait(lambda t: "signing as alice" in t)
            await page.fill("#reason", "photos of the broken item received")
            await page.shot("waiting")
            await page.click("#approve")
            await page.wait(lambda t: "approved as alice: accepted by the workflow" in t)
        finally:
            await asyncio.to_thread(browser.close)
        rest = (await asyncio.wait_for(proc.stdout.read(), 120)).decode()
        assert await proc.wait() == 0, "".join(seen) + rest
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    out = "".join(seen) + rest
    summary = out[out.index("Summary") :]
    lines = {line.split()[0]: line for line in summary.splitlines()[1:] if line.strip()}
    assert "allow:person" in lines["manager-refund"] and "approve:policy" in lines["manager-refund"]
    assert (
        "observe:pii-watch" in lines["observe-email"]
        and lines["observe-email"].split()[1] == "done"
    )
    actions = {m for line in lines.values() for m in re.findall(r"(\w+):", line)}
    assert {"allow", "observe", "mask", "deny", "approve", "halt"} <= actions
    db = out.split("In the support desk database")[1]
    assert "'order_id': 'A2', 'amount': 350.0" in db  # the refund ran after the click
    assert "'subject': 'Order A1', 'body': 'Your order A1 is on its way.'" in db  # observed, sent
