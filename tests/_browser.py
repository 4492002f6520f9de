"""A small headless Chromium driver for UI tests: the DevTools protocol over a pipe, stdlib only.

``chromium --dump-dom`` returns at the load event, before a single-page app has fetched
anything, and ``--virtual-time-budget`` never ends while the Temporal UI polls. So the test
drives the browser itself: navigate, wait until the page's text says what it needs, read it,
take a screenshot. ``--remote-debugging-pipe`` needs no port and no websocket client: Chromium
reads commands on fd 3 and writes answers on fd 4, each a JSON object ended by a NUL byte.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

# From the machine notes: without the background-networking flags Chromium keeps dialling
# Google's hosts, which this network refuses.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


class BrowserError(RuntimeError):
    """Chromium exited, answered with an error, or a page never showed what was waited for."""


def find_chromium() -> str | None:
    """The Chromium executable (``CHROMIUM`` env, else ``chromium`` or ``chromium-browser`` on PATH)."""
    return (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )


def chromium() -> str:
    """The Chromium executable for a test: skipped where there is none, failed in CI."""
    found = find_chromium()
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed; .ci/run installs it (apt-get install chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")


class Chromium:
    """One headless Chromium with a new empty profile, one page, driven synchronously.

    Args:
        binary: the executable (see :func:`find_chromium`).
        window: width and height of the page, in CSS pixels.
    """

    def __init__(self, binary: str, *, window: tuple[int, int] = (1400, 1000)) -> None:
        self.binary = binary
        self.window = window
        self._profile = tempfile.mkdtemp(prefix="duraguard-chromium-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: Any = None
        self._from: Any = None
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None
        self.log_path: Path | None = None

    def __enter__(self) -> Chromium:
        commands_r, commands_w = os.pipe()
        answers_r, answers_w = os.pipe()
        width, height = self.window
        # A one-line trampoline moves the pipe ends to fds 3 and 4 (a shell can't name fds above
        # 9, and preexec_fn is unsafe in a process with threads, as a Temporal worker has).
        trampoline = (
            "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
            "os.execvp(sys.argv[3], sys.argv[3:])"
        )
        cmd = [
            sys.executable, "-c", trampoline, str(commands_r), str(answers_w), self.binary, *FLAGS,
            f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank",
        ]  # fmt: skip
        self.log_path = Path(self._profile) / "chromium.log"
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(commands_r, answers_w),
                start_new_session=True,
            )
        os.close(commands_r)
        os.close(answers_w)
        self._to = os.fdopen(commands_w, "wb", buffering=0)
        self._from = os.fdopen(answers_r, "rb", buffering=0)
        try:
            targets = self.send("Target.getTargets")["targetInfos"]
            page = next(t["targetId"] for t in targets if t["type"] == "page")
            attached = self.send("Target.attachToTarget", targetId=page, flatten=True)
            self._session = attached["sessionId"]
            self.resize(width, height)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ask Chromium to quit, then stop what this object started: its own process group."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                self._session = None
                self._write({"id": self._id(), "method": "Browser.close"})
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                # Chromium's renderers are its children, in the session it was started in.
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for f in (self._to, self._from):
            if f is not None:
                f.close()
        self._to = self._from = None
        shutil.rmtree(self._profile, ignore_errors=True)

    def log_tail(self, lines: int = 20) -> str:
        """The last lines Chromium wrote, for error messages."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        return (
            "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
            or "(empty log)"
        )

    # -- protocol ------------------------------------------------------------------------
    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _write(self, message: dict[str, Any]) -> None:
        self._to.write(json.dumps(message).encode() + b"\0")

    def _read(self, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise BrowserError(f"Chromium did not answer within {timeout:.0f}s")
            chunk = self._from.read(1 << 16)
            if not chunk:
                raise BrowserError(
                    f"Chromium closed the DevTools pipe; its log says:\n{self.log_tail()}"
                )
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command (to the page once attached) and return its result."""
        message: dict[str, Any] = {"id": self._id(), "method": method, "params": params}
        if self._session is not None:
            message["sessionId"] = self._session
        self._write(message)
        while True:
            answer = self._read()
            if answer.get("id") != message["id"]:
                continue  # an event, or the answer to something else
            if "error" in answer:
                raise BrowserError(f"{method} failed: {answer['error']}")
            return dict(answer.get("result", {}))

    # -- page ----------------------------------------------------------------------------
    def goto(self, url: str) -> None:
        """Navigate the page (returns once navigation starts; wait for content with :meth:`wait_for_text`)."""
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise BrowserError(f"could not open {url}: {result['errorText']}")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} raised in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    def text(self) -> str:
        """The page's visible text, as a person would read it, then that of its frames."""
        return "\n".join(
            [str(self.evaluate("document.body ? document.body.innerText : ''")), self.frames_text()]
        )

    def frames_text(self) -> str:
        """The visible text of the page's same-origin iframes (the Temporal UI renders markdown,
        such as a workflow's current details, in one)."""
        js = (
            "[...document.querySelectorAll('iframe')].map(f => {"
            " try { return f.contentDocument.body.innerText; } catch (e) { return ''; } }).join('\\n')"
        )
        return str(self.evaluate(js))

    def wait_for_text(self, ready: Callable[[str], bool], *, timeout: float = 20.0) -> str:
        """Poll the page's text until ``ready(text)`` holds; return that text.

        Raises:
            BrowserError: it did not hold within ``timeout`` seconds, with the last text seen.
        """
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if ready(text):
                return text
            time.sleep(0.25)
        raise BrowserError(
            f"the page did not show what was waited for within {timeout:.0f}s; it showed:\n{text}"
        )

    def click_text(self, label: str, *, timeout: float = 10.0) -> bool:
        """Click the first tab, button or link whose text (its first line: a tab may carry a
        count below) is ``label``, waiting up to ``timeout`` seconds for one to render; whether
        one was clicked."""
        js = (
            "(() => { const want = " + json.dumps(label) + ";"
            " for (const el of document.querySelectorAll('[role=tab], button, a')) {"
            "  if ((el.innerText || '').trim().split('\\n')[0].trim() === want) { el.click(); return true; } }"
            " return false; })()"
        )
        deadline = time.monotonic() + timeout
        while not self.evaluate(js):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.25)
        return True

    def resize(self, width: int, height: int) -> None:
        """Lay the page out at a new size (a wider page shows whole table cells)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """Save a PNG of the page (beyond the window by default; a scrolling panel inside the
        page is shown as far as it fits)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
