"""The README's runnable examples, as the tests read them, and the pieces that run them.

The convention: an HTML comment ``<!-- runnable: NAME -->`` on the line before a fenced code
block marks that block as run by a test (the comment does not show on the rendered page).
:func:`block` returns its text; ``tests/test_readme.py`` fails while a marked block is read by no
test (no ``block("NAME")`` anywhere in ``tests/``), so an example cannot stay in the README
untested, and a test reads the README's own text, so the README cannot drift from the code. To
make another example runnable: put the marker above it, then write a test that calls
``block("NAME")`` and runs it (:func:`run_python` runs a Python block with top-level ``await``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ._http import serve_json

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = re.compile(r"^<!-- runnable: ([a-z0-9-]+) -->\n```(\w*)\n(.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One marked block of the README: its name, its fence's language and its text."""

    name: str
    lang: str
    text: str

    def commands(self) -> list[str]:
        """A shell block's commands, one a line, without comments and blank lines."""
        out = []
        for line in self.text.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command and not command.startswith("#"):
                out.append(command)
        return out


@cache
def blocks() -> dict[str, Block]:
    """Every marked block of the README, by name (a name used twice is an error)."""
    found: dict[str, Block] = {}
    for m in MARKER.finditer(README.read_text(encoding="utf-8")):
        name, lang, text = m.groups()
        if name in found:
            raise AssertionError(f"README.md marks two blocks `runnable: {name}`")
        found[name] = Block(name, lang, text)
    return found


def block(name: str) -> Block:
    """The README's block marked ``<!-- runnable: name -->``."""
    found = blocks().get(name)
    if found is None:
        raise AssertionError(f"README.md has no block marked `<!-- runnable: {name} -->`")
    return found


async def run_python(source: str, namespace: dict[str, Any], filename: str) -> dict[str, Any]:
    """Run a README block (top-level ``await`` allowed) in ``namespace``; return it."""
    code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if result is not None:
        await result
    return namespace


# -- a scripted model behind an OpenAI-compatible endpoint -------------------------------------

Turn = tuple[str, dict[str, Any]] | str
"""A tool call ``(name, arguments)``, or the final answer's text."""


@dataclass
class ScriptedChat:
    """``POST /v1/chat/completions`` answering from a script: turn *n* is played for a request
    that carries *n* assistant messages, so a retried request gets the same answer. Records
    what it was sent."""

    turns: list[Turn]
    base_url: str = ""
    received: list[dict[str, Any]] = field(default_factory=list)

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        self.received.append(body)
        played = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
        turn = self.turns[min(played, len(self.turns) - 1)]
        if isinstance(turn, str):
            message: dict[str, Any] = {"role": "assistant", "content": turn}
        else:
            name, arguments = turn
            call = {
                "id": f"call_{played}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {
            "id": f"chatcmpl-{played}",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }


@contextmanager
def scripted_openai(turns: list[Turn]) -> Iterator[ScriptedChat]:
    """A :class:`ScriptedChat` served on 127.0.0.1 (a free port) for the block of a ``with``."""
    chat = ScriptedChat(list(turns))
    with serve_json(lambda _request, body: (200, chat.reply(body), {})) as url:
        chat.base_url = f"{url}/v1"
        yield chat


async def bash(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """``script`` run by bash as a person types it (stdout and stderr together)."""
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", script, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return int(proc.returncode or 0), out.decode()


def until(check: Callable[[], Any], *, tries: int = 200) -> Any:
    """``check()`` once it is truthy (bounded by attempts, not time)."""
    import time

    for _ in range(tries):
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the condition never held")
