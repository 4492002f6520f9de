"""The approver's inbox in headless Chromium (issue 13), as a manager would use it: the page
shows a parked refund as it parks (no reload), the manager loads their own key file, approves,
and the run completes with them in its audit; a deny carries its reason; an edit a guardrail
refuses is shown refused and cannot be signed; a reader without the right sees no values; an
expired ask leaves the list with its reason.

The page signs with WebCrypto Ed25519 in the browser; the key file is handed to the page's file
input through the DevTools protocol, as a person picks it. Screenshots go to
``$DURAGUARD_ARTIFACTS/inbox`` (``artifacts/`` is gitignored) or else the pytest tmp dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from duraguard.audit import audit_rows
from tests._browser import Chromium
from tests._browser import chromium as _chromium
from tests.test_inbox_api import READER_TOKEN, Desk, open_desk

pytestmark = pytest.mark.timeout(120)

CHECKS = ("schema", "pii", "moderation", "policy")


CLOSED = 90.0
"""Seconds to wait for "Recently closed": it lists from Temporal's visibility store, which a
dev server on a loaded machine brings up to date late. (A page that kept showing a closed ask
beside ``stress --cpu 4`` was the page dropping a change announced during its own read, fixed
and tested in ``test_a_change_while_the_page_reads_the_list_is_not_lost``, not visibility.)"""


class Page:
    """One Chromium page, driven from async tests (each browser call runs in a thread, so the
    worker and the inbox keep serving in the test's event loop)."""

    def __init__(self, browser: Chromium, shots: Path, name: str) -> None:
        self.browser = browser
        self.shots = shots
        self.name = name

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def open(self, url: str) -> None:
        await self.run(self.browser.goto, url)
        # Ready once it knows who you are (or asks you to sign in).
        await self.wait(lambda t: " · may " in t or "Paste the token" in t)

    async def wait(self, ready: Callable[[str], bool], timeout: float = 20.0) -> str:
        return str(await self.run(self.browser.wait_for_text, ready, timeout=timeout))

    async def js(self, expression: str) -> Any:
        return await self.run(self.browser.evaluate, expression)

    async def click(self, selector: str) -> None:
        clicked = await self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return false; e.click(); return true; })()"
        )
        assert clicked, f"nothing matches {selector!r} on the page"

    async def fill(self, selector: str, value: str) -> None:
        """Type into a field: set its value and fire the input event the page listens to."""
        done = await self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            f" if (!e) return false; e.value = {json.dumps(value)};"
            " e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()"
        )
        assert done, f"nothing matches {selector!r} on the page"

    async def choose_file(self, selector: str, path: Path) -> None:
        """Pick a file in a file input, as the person does in the file dialog."""

        def pick() -> None:
            root = self.browser.send("DOM.getDocument")["root"]["nodeId"]
            node = self.browser.send("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
            assert node, f"nothing matches {selector!r} on the page"
            self.browser.send("DOM.setFileInputFiles", files=[str(path)], nodeId=node)

        await self.run(pick)

    async def disabled(self, selector: str) -> bool:
        return bool(await self.js(f"document.querySelector({json.dumps(selector)}).disabled"))

    async def visible(self, selector: str) -> bool:
        return bool(
            await self.js(
                f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                " return !!e && !!e.offsetParent; })()"
            )
        )

    async def shot(self, what: str) -> Path:
        path = self.shots / f"{self.name}-{what}.png"
        await self.run(self.browser.screenshot, path)
        assert path.stat().st_size > 10_000, f"{path} looks empty"
        return path


@pytest.fixture(scope="module")
async def desk(temporal_env: Any, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Desk]:
    async with open_desk(temporal_env, tmp_path_factory.mktemp("inbox-browser")) as d:
        yield d


@pytest.fixture(autouse=True)
def _fresh_orders(desk: Desk) -> None:
    desk.clear_refunds()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    artifacts = os.environ.get("DURAGUARD_ARTIFACTS")
    return Path(artifacts) / "inbox" if artifacts else tmp_path_factory.mktemp("inbox-shots")


@pytest.fixture
async def page(shots: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    binary = _chromium()
    browser = await asyncio.to_thread(Chromium(binary, window=(1400, 1000)).__enter__)
    try:
        yield Page(browser, shots, request.node.name.removeprefix("test_")[:40])
    finally:
        await asyncio.to_thread(browser.close)


def _row(call: str, workflow: str) -> str:
    return f'#asks tr[data-call="{call}"][data-workflow="{workflow}"]'


async def _row_shown(page: Page, workflow: str) -> str:
    return await page.wait(lambda t: workflow in t)


async def test_open_the_inbox_see_the_refund_load_a_key_and_approve(desk: Desk, page: Page) -> None:
    await page.open(desk.open_url)
    await page.wait(lambda t: "Waiting for a person" in t and "live" in t)
    handle = await desk.park()  # parks after the page opened: the list picks it up by itself
    text = await _row_shown(page, handle.id)
    assert "refund_card" in text and "manager" in text and '"amount":350' in text
    await page.click(_row("c1", handle.id))
    text = await page.wait(lambda t: "Verdicts so far" in t and "Open the run" in t)
    assert "Load your key to decide." in text
    assert await page.disabled("#approve") and await page.disabled("#deny")
    await page.choose_file("#key-file", desk.key)
    text = await page.wait(lambda t: "signing as alice" in t)
    assert not await page.disabled("#approve")
    await page.shot("parked")
    await page.fill("#reason", "photos of the broken item received")
    await page.click("#approve")
    text = await page.wait(lambda t: "approved as alice: accepted by the workflow" in t)
    result = await handle.result()
    assert result.stop_reason == "done"
    rows = await audit_rows(handle, desk.client.data_converter)
    assert [(r.action, r.by, r.approver) for r in rows if r.by == "person"] == [
        ("allow", "person", "alice")
    ]
    text = await page.wait(lambda t: f"c1 on {handle.id}: approved by alice" in t, timeout=CLOSED)
    assert "This ask is closed: approved by alice" in text
    await page.shot("approved")
    await desk.replay(handle)


async def test_a_change_while_the_page_reads_the_list_is_not_lost(desk: Desk, page: Page) -> None:
    """On a busy machine the list can change again while the page's read of it is on its way:
    the event that says so arrives during that read. The page reads again, so the second
    change shows without a reload (it used to be dropped until the next change)."""
    inbox = desk.open_inbox
    real = inbox.fresh
    held = asyncio.Event()
    armed = [True]

    async def held_read(max_age: float = 1.0) -> Any:
        snap = await real(max_age)
        if not armed[0]:
            return snap
        armed[0] = False
        held.set()
        # Answer with this snapshot only after the list has changed again, and after the
        # event stream has had time to announce that change to the page.
        async with asyncio.timeout(60):
            while inbox.snapshot.version <= snap.version:
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)
        return snap

    await page.open(desk.open_url)
    await page.wait(lambda t: "Waiting for a person" in t and "live" in t)
    handles = []
    try:
        inbox.fresh = held_read  # type: ignore[method-assign]
        handles.append(await desk.park())  # its event makes the page read the list: held
        async with asyncio.timeout(60):
            await held.wait()
        handles.append(await desk.park())  # announced while that read is on its way
        first, second = handles
        text = await page.wait(lambda t: first.id in t and second.id in t, timeout=60)
        assert "Waiting for a person" in text
    finally:
        inbox.fresh = real  # type: ignore[method-assign]
        for h in handles:
            await h.terminate("test over")
    for h in handles:
        await desk.replay(h)


async def test_deny_with_a_reason_using_the_key_kept_in_the_browser(desk: Desk, page: Page) -> None:
    handle = await desk.park()
    await page.open(desk.open_url)
    await page.click("#key-remember")
    await page.choose_file("#key-file", desk.key)
    await page.wait(lambda t: "signing as alice (kept in this browser)" in t)
    await page.open(desk.open_url)  # a reload: the key comes back from IndexedDB, not a file
    await page.wait(lambda t: "signing as alice (kept in this browser)" in t)
    await _row_shown(page, handle.id)
    await page.click(_row("c1", handle.id))
    await page.wait(lambda t: "Verdicts so far" in t)
    await page.fill("#reason", "order A2 was already replaced")
    await page.click("#deny")
    await page.wait(lambda t: "denied as alice: accepted by the workflow" in t)
    result = await handle.result()
    refused = next(m for m in result.messages if m.role == "tool" and m.name == "refund_card")
    assert "order A2 was already replaced" in (refused.content or "")
    text = await page.wait(lambda t: f"c1 on {handle.id}: denied by alice" in t, timeout=CLOSED)
    assert "“order A2 was already replaced”" in text
    await page.shot("denied")
    await page.click("#key-forget")
    await page.wait(lambda t: "Key file" in t and "signing as" not in t)
    await desk.replay(handle)


async def test_an_edit_a_guardrail_refuses_is_shown_refused_and_cannot_be_signed(
    desk: Desk, page: Page
) -> None:
    handle = await desk.park()
    await page.open(desk.open_url)
    await page.choose_file("#key-file", desk.key)
    await page.wait(lambda t: "signing as alice" in t)
    await _row_shown(page, handle.id)
    await page.click(_row("c1", handle.id))
    await page.wait(lambda t: "Verdicts so far" in t)
    await page.fill('#detail-args input[data-arg="amount"]', '"all of it"')
    await page.wait(lambda t: "Approve with edits" in t and "Check edits" in t)
    assert await page.disabled("#approve"), "edits nobody checked must not be signable"
    await page.click("#check-edits")
    text = await page.wait(lambda t: "edits refused by schema" in t)
    assert await page.disabled("#approve")
    await page.shot("edit-refused")
    # An edit the guardrails accept can be signed, and the refund runs with it.
    await page.fill('#detail-args input[data-arg="amount"]', "120")
    await page.click("#check-edits")
    text = await page.wait(lambda t: "edits accepted by the guardrails" in t)
    assert not await page.disabled("#approve")
    await page.click("#approve")
    text = await page.wait(lambda t: "accepted by the workflow" in t)
    result = await handle.result()
    ran = next(m for m in result.messages if m.role == "tool" and m.name == "refund_card")
    assert '"amount":120.0' in (ran.content or "").replace(" ", ""), text
    await desk.replay(handle)


async def test_the_page_signs_only_a_statement_it_has_checked_itself(
    desk: Desk, page: Page
) -> None:
    """A compromised server asked for "approve with edits {amount: 150}" could hand back a
    statement with another edits digest or a far expiry: the page works both out itself."""
    from duraguard._canonical import digest

    await page.open(desk.open_url)
    await page.wait(lambda t: "Key file" in t)
    edits = {"amount": 150, "note": 'für Ana, "ok"'}
    want = {"workflow_id": "wf", "run_id": "r1", "call_id": "c1", "decision": "approve",
            "approver": "alice", "reason": None, "edits": edits}  # fmt: skip
    honest = {**{k: v for k, v in want.items() if k != "edits"}, "v": 2, "challenge": "x",
              "call_digest": "y", "edits_digest": digest(edits), "expires_at": time.time() + 3600,
              "nonce": "n" * 16}  # fmt: skip

    async def verdict(statement: dict[str, Any]) -> str:
        text = json.dumps(json.dumps(statement))
        return str(
            await page.js(
                f"checkStatement({text}, {json.dumps(want)}).then(() => 'signs', e => e.message)"
            )
        )

    assert await verdict(honest) == "signs"
    assert "does not match your edits" in await verdict({**honest, "edits_digest": "0" * 64})
    assert "does not match your edits" in await verdict({**honest, "edits_digest": None})
    assert "expires at" in await verdict({**honest, "expires_at": time.time() + 30 * 86400})
    assert "names reason" in await verdict({**honest, "reason": "words put in her mouth"})


async def test_a_reader_without_the_right_sees_no_values(desk: Desk, page: Page) -> None:
    handle = await desk.park()
    await page.open(desk.guarded_url)
    await page.wait(lambda t: "Sign in" in t)
    await page.fill("#token", READER_TOKEN)
    await page.click("#sign-in")
    text = await page.wait(lambda t: "rita · may see" in t and handle.id in t)
    await page.click(_row("c1", handle.id))
    text = await page.wait(lambda t: "hidden: you may not read values" in t and "Verdicts" in t)
    assert "refund_card" in text and "manager" in text
    for secret in ("350", "A2", "refunds over 100"):
        # As a word: a run id's hex digits may hold "350" (seen: 01a23509-...).
        seen = re.search(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", text)
        assert seen is None, f"a reader without the right sees {secret!r}:\n{text}"
    assert not await page.visible("#approve") and not await page.visible("#key-file")
    await page.shot("reader")
    await page.click("#sign-out")
    await page.wait(lambda t: "Paste the token" in t and handle.id not in t)
    await handle.terminate(reason="test over")


async def test_an_expired_ask_leaves_the_page_with_its_reason(desk: Desk, page: Page) -> None:
    await page.open(desk.open_url)
    handle = await desk.park("expired-ask", timeout=4)
    await _row_shown(page, handle.id)
    await page.click(_row("c1", handle.id))
    started = time.monotonic()
    text = await page.wait(
        lambda t: "This ask is closed: expired: nobody decided before the ask expired" in t,
        timeout=30,
    )
    assert time.monotonic() - started < 30
    assert f"refund_card c1 on {handle.id}: expired" in text
    assert not await page.visible(_row("c1", handle.id))
    await page.shot("expired")
    await handle.result()
