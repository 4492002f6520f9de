"""A chat bot over the approver's inbox: it tells you what waits and takes your yes or no.

It speaks only the inbox's HTTP JSON API (stdlib ``urllib``), so the same few calls work from
any chat platform's bot, ticket system or script. It signs with *your* key, on your machine:
the inbox hands over the exact statement to sign, the bot signs those bytes with Ed25519 and
posts the signature back; the inbox forwards the decision to the workflow and answers with the
worker's verdict on it.

Environment:
    INBOX_URL            the inbox (default http://127.0.0.1:8090)
    INBOX_TOKEN          your token, when the inbox has an access file
    DURAGUARD_KEY        your private key file (from ``duraguard keygen NAME``)
    DURAGUARD_APPROVER   the name your key is registered under (default: the key file's name)

Then type, one command a line, as in a chat::

    list                     what waits, numbered
    show 1                   one ask, with the run's verdicts so far
    approve 1 [reason]       sign and send a yes
    deny 1 reason            sign and send a no
    quit
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key


class InboxError(Exception):
    """The inbox answered with an error (its message says why)."""


class Inbox:
    """The inbox's JSON API.

    Args:
        url: where the inbox listens.
        token: a bearer token (an inbox with an access file); without one the bot uses the CSRF
            token an open inbox hands out, as its own page does.
    """

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        else:
            self.headers["X-CSRF-Token"] = self.call("GET", "/api/me")["csrf"]

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if data else {})}
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:
            try:
                message = json.load(e).get("error", e.reason)
            except ValueError:
                message = e.reason
            raise InboxError(f"{e.code}: {message}") from None

    def asks(self) -> list[dict[str, Any]]:
        return list(self.call("GET", "/api/asks")["asks"])

    def ask(self, workflow_id: str, call_id: str) -> dict[str, Any]:
        query = urllib.parse.urlencode({"workflow_id": workflow_id, "call_id": call_id})
        return dict(self.call("GET", f"/api/ask?{query}"))

    def decide(
        self,
        ask: dict[str, Any],
        kind: str,
        *,
        approver: str,
        key: Ed25519PrivateKey,
        reason: str | None,
    ) -> dict[str, Any]:
        """Get the statement, sign it here, post the signed decision; the worker's answer."""
        prepared = self.call(
            "POST",
            "/api/statement",
            {
                "workflow_id": ask["workflow_id"],
                "call_id": ask["call_id"],
                "decision": kind,
                "approver": approver,
                "reason": reason,
            },
        )
        statement: str = prepared["statement"]
        said = json.loads(statement)
        # Sign only what this bot chose, checked here: the server could be someone else's.
        chosen = (ask["workflow_id"], ask["run_id"], ask["call_id"], kind, approver, reason, None)
        fields = (
            "workflow_id",
            "run_id",
            "call_id",
            "decision",
            "approver",
            "reason",
            "edits_digest",
        )
        stated = tuple(said.get(k) for k in fields)
        expires = said.get("expires_at")
        now = time.time()
        if (
            stated != chosen
            or not isinstance(expires, int | float)
            or not now < expires < now + 4200
        ):
            raise InboxError("the statement to sign is not the decision asked for; not signing it")
        signature = base64.b64encode(key.sign(statement.encode())).decode()
        return dict(
            self.call(
                "POST",
                "/api/decide",
                {
                    "decision": {**prepared["decision"], "signature": signature},
                    "statement": statement,
                },
            )
        )


class Bot:
    """Turns chat lines into inbox calls, and answers in chat lines."""

    def __init__(
        self, inbox: Inbox, *, key: Ed25519PrivateKey, approver: str, say: Callable[[str], None]
    ) -> None:
        self.inbox = inbox
        self.key = key
        self.approver = approver
        self.say = say
        self.listed: list[dict[str, Any]] = []

    def run(self, lines: Iterable[str]) -> None:
        self.say(f"Hi {self.approver}. {self._summary()} Type 'list' to see them.")
        for line in lines:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            try:
                self.handle(words[0], words[1:])
            except InboxError as e:
                self.say(f"The inbox says: {e}")

    def _summary(self) -> str:
        self.listed = self.inbox.asks()
        n = len(self.listed)
        return "Nothing waits for you." if n == 0 else f"{n} call(s) wait for a person."

    def _pick(self, args: list[str]) -> dict[str, Any] | None:
        if not args or not args[0].isdigit() or not 1 <= int(args[0]) <= len(self.listed):
            self.say(f"Which one? Give a number from 'list' (1-{len(self.listed)}).")
            return None
        return self.listed[int(args[0]) - 1]

    def handle(self, command: str, args: list[str]) -> None:
        if command == "list":
            self.say(self._summary())
            for i, a in enumerate(self.listed, 1):
                values = json.dumps(a["args"]) if a.get("values") else "(values hidden)"
                self.say(
                    f"  {i}. {a['tool']} {values} on {a['workflow_id']} ({a['call_id']}): "
                    f"{a.get('reason') or 'asked by ' + a['decided_by']}; role {a['role'] or 'any'}; "
                    f"{int(a['expires_in'] // 60)} min left"
                )
        elif command == "show" and (a := self._pick(args)):
            detail = self.inbox.ask(a["workflow_id"], a["call_id"])
            self.say(f"{a['tool']} on {a['workflow_id']}, run {detail['run_id']}:")
            for v in detail["verdicts"]:
                self.say(
                    f"  turn {v['turn']} {v['call_id']} {v['tool']}: {v['action']} by {v['decided_by']}"
                )
        elif command in ("approve", "deny") and (a := self._pick(args)):
            reason = " ".join(args[1:]) or None
            if command == "deny" and not reason:
                self.say("Say why, so the agent and the audit know: deny N reason")
                return
            answer = self.inbox.decide(
                a, command, approver=self.approver, key=self.key, reason=reason
            )
            if answer["accepted"]:
                self.say(
                    f"Done: {a['tool']} on {a['workflow_id']} {command}d as {answer['approver']}."
                )
            else:
                self.say(f"Not accepted: {answer['reason']}")
        elif command not in ("show", "approve", "deny"):
            self.say("I know: list, show N, approve N [reason], deny N reason, quit.")


def load_key(path: Path) -> Ed25519PrivateKey:
    key = load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise SystemExit(
            f"{path} is not an Ed25519 private key; make one with `duraguard keygen NAME`"
        )
    return key


def main() -> int:
    key_path = os.environ.get("DURAGUARD_KEY")
    if not key_path:
        print(
            "set DURAGUARD_KEY to your private key file (from `duraguard keygen NAME`)",
            file=sys.stderr,
        )
        return 2
    path = Path(key_path)
    approver = os.environ.get("DURAGUARD_APPROVER") or path.name.removesuffix(".pem")
    inbox = Inbox(
        os.environ.get("INBOX_URL", "http://127.0.0.1:8090"), os.environ.get("INBOX_TOKEN")
    )
    Bot(
        inbox,
        key=load_key(path),
        approver=approver,
        say=lambda text: print(f"bot> {text}", flush=True),
    ).run(sys.stdin)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
