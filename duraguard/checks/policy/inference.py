"""What a tool nobody marked does: read, write or send, from its annotations, name and words.

Verbs of effect outrank what a tool returns: ``get_and_delete`` deletes, and "It returns the
file that was deleted" describes a deletion, not a read. A word that is a verb or a noun
(``email``, ``message``, ``post``) sends only where it leads the name: ``delete_email`` deletes
and ``add_user_to_channel`` adds, neither sends. MCP annotations (``readOnlyHint``,
``destructiveHint``, ``idempotentHint``, ``openWorldHint``, with the specification's defaults)
are read where a tool carries them; they are hints from the tool's server, so a name or a
description that changes something outranks a read-only hint. Every reading says how sure it
is and why; a tool nothing speaks for counts as a write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..._addresses import name_words as name_words

Kind = Literal["read", "write", "send"]
KindSource = Literal["file", "mark", "annotation", "inferred", "default", "withheld"]

READ_VERBS = frozenset(
    {
        "get", "list", "search", "find", "fetch", "read", "lookup", "look", "query", "show",
        "describe", "view", "count", "check", "browse", "load", "retrieve", "inspect", "peek",
        "stat", "download", "summarize", "summarise", "preview", "verify", "validate",
        "calculate", "compute", "estimate", "translate", "explain", "resolve", "scan",
        "watch", "poll", "ls", "cat", "head", "tail", "grep", "print", "display", "see", "open",
    }
)  # fmt: skip
WRITE_VERBS = frozenset(
    {
        "delete", "remove", "create", "update", "set", "edit", "modify", "write", "save", "add",
        "insert", "append", "put", "patch", "move", "rename", "copy", "upload", "archive",
        "cancel", "book", "reserve", "buy", "purchase", "order", "pay", "transfer", "refund",
        "charge", "schedule", "reschedule", "assign", "approve", "reject", "close", "reset",
        "change", "grant", "revoke", "enable", "disable", "install", "uninstall", "deploy",
        "run", "execute", "exec", "kill", "stop", "start", "restart", "register", "unregister",
        "subscribe", "unsubscribe", "mark", "tag", "label", "merge", "drop", "truncate", "clear",
        "purge", "wipe", "apply", "submit", "trash", "erase", "destroy", "rm", "mkdir",
        "commit", "push", "accept", "decline", "join", "leave", "kick", "ban", "block", "mute",
        "pin", "unpin", "lock", "unlock", "restore", "replace", "fill", "sign", "withdraw",
        "deposit", "rent", "hire", "make", "new", "generate", "draft", "import", "sync",
        "increase", "decrease", "adjust", "flag", "star", "like", "vote", "rate", "follow",
        "unfollow", "void", "issue", "provision", "terminate", "suspend", "activate",
    }
)  # fmt: skip
SEND_VERBS = frozenset(
    {
        "send", "notify", "publish", "forward", "tweet", "reply", "broadcast", "announce",
        "invite", "share", "respond", "wire", "dispatch", "relay", "alert", "page", "call",
    }
)  # fmt: skip
LEADING_SEND = frozenset({"email", "mail", "post", "message", "sms", "text", "dm", "ping", "slack"})
"""Words that send when they lead a name (``email_customer``), nouns elsewhere (``delete_email``)."""
READ_NOUNS = frozenset(
    {
        "history", "status", "details", "detail", "info", "information", "summary", "report",
        "log", "logs", "stats", "statistics", "count", "list", "lookup", "preview", "view",
    }
)  # fmt: skip
"""Nouns of reading: next to one, an ambiguous word is a noun ("order_history")."""
AMBIGUOUS = frozenset(
    {
        "order", "book", "label", "tag", "mark", "block", "lock", "issue", "page", "call",
        "star", "like", "rate", "flag", "charge", "transfer", "run", "start", "stop", "set",
        "change", "drop", "pin", "sign", "rent", "deposit", "new", "make", "import", "sync",
        "apply", "follow", "vote", "alert", "share", "wire", "copy", "draft", "post", "text",
        "message", "reply", "close", "clear", "save", "accept", "join", "leave",
    }
)  # fmt: skip
"""Words that are verbs where they lead a name (``book_hotel``), nouns elsewhere (``get_order``)."""
SEND_ARGS = frozenset(
    {"to", "recipient", "recipients", "cc", "bcc", "channel", "webhook", "webhook_url", "phone"}
)

_NEG = r"(?<!not )(?<!never )(?<!n't )(?<!without )"
_EFFECT = re.compile(
    _NEG + r"\b(?:delet|remov|creat|updat|modif|overwrit|writ|sav|cancel|book|reserv|pay|paid|"
    r"transferr?|mov|renam|archiv|charg|refund|submit|schedul|chang|append|upload|install|"
    r"revok|grant|reset|eras|wip|purg|clos|insert|edit|destroy|trash|replac|assign|approv|"
    r"reject|execut|deploy|kill|terminat|withdr[ae]w|deposit|purchas)"
    r"(?:e|es|ed|ing|s|ies|ied|y|ion|ions)?\b",
    re.I,
)
_SENDS = re.compile(
    _NEG + r"\b(?:send|sends|sent|emails|emailed|posts|posted|publish(?:es|ed)?|notif(?:y|ies|ied)|"
    r"deliver(?:s|ed)?|forward(?:s|ed)?|shares|shared|invit(?:e|es|ed)|broadcasts?|texts|"
    r"messages|repl(?:y|ies|ied) to)\b",
    re.I,
)
_NOUN_BEFORE = re.compile(
    r"(?:\b(?:the|a|an|your|my|our|their|his|her|its|all|any|some|of|recent|new|newest|latest|"
    r"oldest|last|unread|incoming|received|inbound|archived|starred|draft|pending|past|"
    r"previous)|\w's)\s+$",
    re.I,
)
"""Words after which a verb of sending is a noun or an adjective ("the newest emails", "the
user's messages"). Only words that cannot end a subject: "the tool emails" still sends."""
_READS = re.compile(
    r"\b(?:read[- ]only|does not (?:change|modify|write)|never (?:changes|modifies|writes)|"
    r"without (?:changing|side effects)|no side effects|looks? up|retrieves?|lists|searches|"
    r"gets|fetch(?:es)?|reads|queries|shows|finds)\b",
    re.I,
)


@dataclass(frozen=True)
class KindReading:
    """A tool's kind, who said so, how sure that is (0 to 1) and why, in words."""

    kind: Kind
    source: KindSource
    confidence: float
    why: str

    @property
    def detail(self) -> str:
        return f"{self.kind} ({self.source}, confidence {self.confidence:.1f}): {self.why}"


def _from_name(words: list[str]) -> KindReading | None:
    effect = [
        w
        for i, w in enumerate(words)
        if (i == 0 and (w in LEADING_SEND or w in WRITE_VERBS or w in SEND_VERBS))
        or ((w in WRITE_VERBS or w in SEND_VERBS) and w not in AMBIGUOUS)
    ]
    if effect:
        first = effect[0]
        if first in SEND_VERBS or first in LEADING_SEND:
            return KindReading("send", "inferred", 0.8, f"the name's verb {first!r} sends")
        return KindReading("write", "inferred", 0.8, f"the name's verb {first!r} changes something")
    read = next((w for w in words if w in READ_VERBS), None)
    if read is not None:
        sure = 0.8 if words and words[0] == read else 0.7
        return KindReading("read", "inferred", sure, f"the name's verb {read!r} reads")
    return None


def _verb(pattern: re.Pattern[str], text: str) -> str | None:
    """The first match of ``pattern`` used as a verb: not after an article or a possessive
    ("the updated record", "your messages" are nouns and adjectives)."""
    for m in pattern.finditer(text):
        before = text[max(0, m.start() - 12) : m.start()]
        if not _NOUN_BEFORE.search(before):
            return m.group(0)
    return None


def _from_description(text: str) -> KindReading | None:
    if not text:
        return None
    sends, effect = _verb(_SENDS, text), _verb(_EFFECT, text)
    if sends:
        return KindReading("send", "inferred", 0.6, f"its description says {sends!r}")
    if effect:
        return KindReading("write", "inferred", 0.6, f"its description says {effect!r}")
    reads = _READS.search(text)
    if reads:
        return KindReading("read", "inferred", 0.6, f"its description says {reads.group(0)!r}")
    return None


def _hint(annotations: Mapping[str, Any], camel: str, snake: str, default: bool) -> bool:
    value = annotations.get(camel, annotations.get(snake))
    return default if value is None else bool(value)


def from_annotations(annotations: Mapping[str, Any]) -> KindReading:
    """The kind MCP annotations give, with the specification's defaults for hints not given:
    read-only -> read; else open world (default) -> send; else write."""
    if _hint(annotations, "readOnlyHint", "read_only_hint", False):
        return KindReading("read", "annotation", 0.9, "its annotations say readOnlyHint")
    if _hint(annotations, "openWorldHint", "open_world_hint", True):
        destructive = _hint(annotations, "destructiveHint", "destructive_hint", True)
        how = "destructive, " if destructive else ""
        return KindReading(
            "send", "annotation", 0.9, f"its annotations say not read-only, {how}open world"
        )
    return KindReading("write", "annotation", 0.9, "its annotations say not read-only")


def infer(
    name: str,
    description: str = "",
    input_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> KindReading | None:
    """The kind a tool's annotations, name, description and arguments point to, or ``None``.

    A verb of effect anywhere (name or description) outranks a read, and an annotation that
    says read-only does not hide a name or description that changes something.
    """
    by_name = _from_name(name_words(name))
    by_text = _from_description(description)
    effect = next((r for r in (by_name, by_text) if r is not None and r.kind != "read"), None)
    if annotations is not None:
        hinted = from_annotations(annotations)
        if hinted.kind == "read" and effect is not None and effect is by_name:
            # A word that is a verb or a noun ("order", "post") next to a noun of reading
            # ("order_history") does not contradict the hint; any other verb of effect does.
            words = name_words(name)
            if set(words) & READ_NOUNS:
                plain = _from_name([w for w in words if w not in AMBIGUOUS])
                effect = next(
                    (r for r in (plain, by_text) if r is not None and r.kind != "read"), None
                )
        if hinted.kind == "read" and effect is not None:
            return KindReading(
                effect.kind,
                "inferred",
                effect.confidence,
                f"{effect.why}, although its annotations say readOnlyHint",
            )
        return hinted
    if effect is not None:
        return effect
    if by_name is not None:
        return by_name
    props = set(((input_schema or {}).get("properties") or {}).keys())
    if props & SEND_ARGS:
        arg = sorted(props & SEND_ARGS)[0]
        return KindReading("send", "inferred", 0.5, f"it takes {arg!r}")
    return by_text
