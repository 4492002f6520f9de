"""The session ledger the workflow keeps: calls, verdicts, result digests, labels, a hash chain.

Pure and deterministic (it runs inside workflow code). Each check gets a bounded
:class:`SessionView` of it, never the whole transcript, so history grows with the call and not
with the session. The chain binds every entry to the one before and to the session id: an
entry edited, reordered or carried over from another session breaks it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._types import LedgerEntry, Provenance, SessionView, canonical_json, digest

RECENT = 8
SAME_TOOL = 16
MAX_TOKENS_PER_SOURCE = 256


def chain_hash(prev: str, session_id: str, entry: LedgerEntry) -> str:
    body = entry.model_dump(mode="json", exclude={"entry_hash"})
    return hashlib.sha256(f"{prev}|{session_id}|{canonical_json(body)}".encode()).hexdigest()


def verify_chain(session_id: str, entries: list[LedgerEntry] | tuple[LedgerEntry, ...], start: str = "") -> bool:
    """True where every entry's hash follows from the one before, within this session."""
    prev = start
    for e in entries:
        if chain_hash(prev, session_id, e) != e.entry_hash:
            return False
        prev = e.entry_hash
    return True


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9@._:/+-]*")


def tokens(value: Any) -> set[str]:
    """Normalised scalar tokens of a value, for provenance (lower case, no trailing punctuation)."""
    out: set[str] = set()

    def add(leaf: Any) -> None:
        if isinstance(leaf, bool) or leaf is None:
            return
        if isinstance(leaf, int | float):
            out.add(_num(leaf))
            return
        text = str(leaf)
        out.add(text.strip().lower())
        for t in _TOKEN.findall(text):
            t = t.rstrip(".:/-").lower()
            if t:
                out.add(t)
                n = _maybe_num(t)
                if n is not None:
                    out.add(n)

    _walk(value, add)
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _maybe_num(t: str) -> str | None:
    try:
        return _num(float(t.replace(",", "")))
    except ValueError:
        return None


def _walk(value: Any, fn: Any) -> None:
    if isinstance(value, dict):
        for v in value.values():
            _walk(v, fn)
    elif isinstance(value, list | tuple):
        for v in value:
            _walk(v, fn)
    else:
        fn(value)


class LedgerState(BaseModel):
    """The ledger as carried across continue-as-new."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    entries: list[LedgerEntry] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)
    labels_seen: list[str] = Field(default_factory=list)
    sources: dict[str, list[str]] = Field(default_factory=dict)
    """Token -> where it was seen (``turn:i``, ``result:j``, ``prompt``, ``outside:label``)."""
    base_hash: str = ""
    """Hash of the entries dropped when the ledger was compacted (continue-as-new)."""


class Ledger:
    """The session record of one agent run (workflow side)."""

    def __init__(self, state: LedgerState) -> None:
        self.state = state

    @classmethod
    def new(cls, session_id: str) -> Ledger:
        return cls(LedgerState(session_id=session_id))

    @property
    def head(self) -> str:
        return self.state.entries[-1].entry_hash if self.state.entries else self.state.base_hash

    def _note(self, value: Any, source: str) -> None:
        for i, t in enumerate(sorted(tokens(value))):
            if i >= MAX_TOKENS_PER_SOURCE:
                break
            seen = self.state.sources.setdefault(t, [])
            if source not in seen and len(seen) < 8:
                seen.append(source)

    def add_prompt(self, text: str) -> None:
        self._note(text, "prompt")

    def add_turn(self, text: str) -> None:
        self.state.turns.append(text)
        self._note(text, f"turn:{len(self.state.turns) - 1}")

    def record(
        self,
        *,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        action: str,
        ran: bool,
        ok: bool = True,
        at: float,
        result: Any = None,
        labels: tuple[str, ...] = (),
        compensation_of: int | None = None,
    ) -> LedgerEntry:
        index = len(self.state.entries)
        entry = LedgerEntry(
            index=index,
            call_id=call_id,
            tool=tool,
            args=args,
            action=action,  # type: ignore[arg-type]
            ran=ran,
            ok=ok,
            at=at,
            result_digest=digest(result) if ran else None,
            labels=labels,
            compensation_of=compensation_of,
        )
        entry = entry.model_copy(update={"entry_hash": chain_hash(self.head, self.state.session_id, entry)})
        self.state.entries.append(entry)
        if ran:
            src = f"result:{index}"
            self._note(result, src)
            for label in labels:
                self._note(result, f"outside:{label}")
                if label not in self.state.labels_seen:
                    self.state.labels_seen.append(label)
        return entry

    def provenance(self, args: Any) -> tuple[Provenance, ...]:
        out = []
        for path, leaf in _leaves(args):
            if isinstance(leaf, bool) or leaf is None:
                continue
            srcs: list[str] = []
            for t in sorted(tokens(leaf)):
                for s in self.state.sources.get(t, ()):
                    if s not in srcs:
                        srcs.append(s)
            out.append(Provenance(path=path, value=leaf, sources=tuple(srcs)))
        return tuple(out)

    def view(self, *, tool: str, args: Any, now: float, related: tuple[int, ...] = ()) -> SessionView:
        """The bounded slice a check of ``tool(args)`` reads."""
        entries = self.state.entries
        picked: dict[int, LedgerEntry] = {e.index: e for e in entries[-RECENT:]}
        same = [e for e in entries if e.tool == tool][-SAME_TOOL:]
        picked.update({e.index: e for e in same})
        for i in related:
            if 0 <= i < len(entries):
                picked[i] = entries[i]
        return SessionView(
            session_id=self.state.session_id,
            calls=len(entries),
            chain_head=self.head,
            tool_counts=dict(Counter(e.tool for e in entries if e.ran)),
            entries=tuple(picked[i] for i in sorted(picked)),
            labels_seen=tuple(self.state.labels_seen),
            turns=tuple(self.state.turns[-1:]),
            provenance=self.provenance(args),
            now=now,
        )


def _leaves(value: Any, path: str = "#") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            out.extend(_leaves(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}"))
        return out
    if isinstance(value, list | tuple):
        out = []
        for i, v in enumerate(value):
            out.extend(_leaves(v, f"{path}/{i}"))
        return out
    return [(path, value)]
