"""The session ledger the workflow keeps: calls, verdicts, result digests, labels, a hash chain.

Pure and deterministic (it runs inside workflow code). Each check gets a bounded
:class:`SessionView` of it, never the whole transcript, so history grows with the call and not
with the session. The chain binds every entry to the one before and to the session id: an
entry edited, reordered or carried over from another session breaks it, and every call after
the break is refused by the policy's session record check.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._types import LedgerEntry, Provenance, SessionView, canonical_json, digest

RECENT = 8
"""The last calls every view carries."""
SAME_TOOL = 16
"""The last calls of the tool being checked (for limits per period and order rules)."""
LATEST_PER_TOOL = 12
"""The latest ran call of this many distinct tools (for rules over earlier results)."""
MAX_TOKENS_PER_SOURCE = 256
MAX_RESULT_FIELDS = 16
MAX_NONCES = 64


def _entry_body(entry: LedgerEntry) -> str:
    # Field by field rather than model_dump: the session record check hashes every entry it is
    # shown, on every call, so this is on the hot path.
    return json.dumps(
        [
            entry.index, entry.call_id, entry.tool, entry.args, entry.action, entry.ran, entry.ok,
            entry.at, entry.result_digest, list(entry.labels), entry.compensation_of,
            entry.result_fields, entry.turn, entry.prev_hash,
        ],
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
    )  # fmt: skip


def chain_hash(prev: str, session_id: str, entry: LedgerEntry) -> str:
    """The hash of ``entry`` chained to ``prev`` within ``session_id``."""
    return hashlib.sha256(f"{prev}|{session_id}|{_entry_body(entry)}".encode()).hexdigest()


def entry_intact(session_id: str, entry: LedgerEntry) -> bool:
    """True where ``entry`` hashes to its own ``entry_hash`` from its ``prev_hash`` in this session."""
    return chain_hash(entry.prev_hash, session_id, entry) == entry.entry_hash


def verify_chain(
    session_id: str, entries: list[LedgerEntry] | tuple[LedgerEntry, ...], start: str = ""
) -> bool:
    """True where every entry's hash follows from the one before, within this session."""
    return first_break(session_id, entries, start) is None


def first_break(
    session_id: str, entries: list[LedgerEntry] | tuple[LedgerEntry, ...], start: str = ""
) -> int | None:
    """The position of the first entry that does not follow from the one before, or ``None``."""
    prev = start
    for pos, e in enumerate(entries):
        if (
            e.prev_hash != prev
            or e.index != pos + (entries[0].index if entries else 0)
            or not entry_intact(session_id, e)
        ):
            return pos
        prev = e.entry_hash
    return None


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


def leaf_keys(leaf: Any) -> set[str]:
    """The forms one of a call's values is looked up under: whole value, as a number, as an id;
    for prose, only its value-like words (with a digit, ``@`` or ``/``)."""
    if isinstance(leaf, int | float) and not isinstance(leaf, bool):
        return {_num(leaf)}
    text = str(leaf).strip()
    low = text.lower()
    if not text:
        return set()
    if " " not in text and len(text) <= 200:
        keys = {low, low.lstrip("#").rstrip("/")}
        n = _maybe_num(low.lstrip("$€£¥"))
        if n is not None:
            keys.add(n)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", low):
            keys.add("--" + low[5:10])
        return keys
    return {t.rstrip(".:/-").lower() for t in _TOKEN.findall(text) if re.search(r"[\d@/]", t)}


def _num(x: float) -> str:
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        return str(f)
    return str(int(f)) if f.is_integer() else repr(round(f, 6))


def _maybe_num(t: str) -> str | None:
    try:
        return _num(float(t.replace(",", "")))
    except (ValueError, OverflowError):
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


def _result_fields(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in result.items():
        if len(out) >= MAX_RESULT_FIELDS:
            break
        if isinstance(v, bool | int | float) or v is None or (isinstance(v, str) and len(v) <= 256):
            out[str(k)] = v
    return out


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
    sums: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per tool, the running total of each numeric top-level argument of the calls that ran."""
    plan: dict[str, Any] | None = None
    """The signed plan a person approved (a :class:`PlanToken` as a dict), if any."""
    plan_step: int = 0
    """How many of the plan's steps have run."""
    used_nonces: list[str] = Field(default_factory=list)
    dropped_counts: dict[str, int] = Field(default_factory=dict)
    """Per tool, the calls that ran in entries compacted away (they still count for order rules)."""
    dropped: int = 0
    """How many entries were compacted away: the first kept entry's index."""


class Ledger:
    """The session record of one agent run (workflow side)."""

    def __init__(self, state: LedgerState) -> None:
        self.state = state
        self._verified: list[LedgerEntry] = []

    @classmethod
    def new(cls, session_id: str) -> Ledger:
        return cls(LedgerState(session_id=session_id))

    @property
    def head(self) -> str:
        return self.state.entries[-1].entry_hash if self.state.entries else self.state.base_hash

    def _note(self, value: Any, source: str, extra: set[str] | None = None) -> None:
        found = tokens(value) | (extra or set())
        for i, t in enumerate(sorted(found)):
            if i >= MAX_TOKENS_PER_SOURCE:
                break
            seen = self.state.sources.setdefault(t, [])
            if source not in seen and len(seen) < 8:
                seen.append(source)

    def add_prompt(self, text: str) -> None:
        self._note(text, "prompt", _said(text))

    def add_turn(self, text: str) -> None:
        self.state.turns.append(text)
        self._note(text, f"turn:{len(self.state.turns) - 1}", _said(text))

    def compact(self, keep: int = 64) -> None:
        """Drop all but the last ``keep`` entries (before continue-as-new).

        The chain stays checkable: ``base_hash`` becomes the hash of the last dropped entry, so
        the kept entries still verify from it, and counts of what ran are kept per tool.
        """
        entries = self.state.entries
        if keep < 0:
            raise ValueError(f"keep must be >= 0; got {keep}")
        if len(entries) > keep:
            dropped = entries[: len(entries) - keep]
            counts = Counter(self.state.dropped_counts)
            counts.update(e.tool for e in dropped if e.ran)
            self.state.dropped_counts = dict(counts)
            self.state.base_hash = dropped[-1].entry_hash
            self.state.dropped += len(dropped)
            self.state.entries = entries[len(entries) - keep :]
            self._verified = []

    def verify(self) -> int | None:
        """The position of the first entry that breaks the chain, or ``None`` when intact."""
        return first_break(self.state.session_id, self.state.entries, self.state.base_hash)

    def accept_plan(self, token: Any) -> None:
        """Start following a plan a person approved (a signed :class:`PlanToken` or its dict)."""
        data = token.model_dump(mode="json") if hasattr(token, "model_dump") else dict(token)
        self.state.plan = data
        self.state.plan_step = 0

    def use_nonce(self, nonce: str) -> None:
        """Remember a person's decision as used, so the same yes cannot be replayed."""
        if nonce not in self.state.used_nonces:
            self.state.used_nonces.append(nonce)
            del self.state.used_nonces[:-MAX_NONCES]

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
        index = self.state.dropped + len(self.state.entries)
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
            result_fields=_result_fields(result) if ran else {},
            turn=len(self.state.turns) - 1,
            prev_hash=self.head,
        )
        entry = entry.model_copy(
            update={"entry_hash": chain_hash(self.head, self.state.session_id, entry)}
        )
        self.state.entries.append(entry)
        if ran:
            self._ran(entry, result, labels)
        return entry

    def _ran(self, entry: LedgerEntry, result: Any, labels: tuple[str, ...]) -> None:
        self._note(result, f"result:{entry.index}")
        for label in labels:
            self._note(result, f"outside:{label}")
            if label not in self.state.labels_seen:
                self.state.labels_seen.append(label)
        sums = self.state.sums.setdefault(entry.tool, {})
        for k, v in entry.args.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                sums[k] = sums.get(k, 0.0) + float(v)
        plan = self.state.plan
        if plan and entry.ok:
            steps = plan.get("steps") or []
            if self.state.plan_step < len(steps):
                step = steps[self.state.plan_step]
                if step.get("tool") == entry.tool and canonical_json(
                    step.get("args", {})
                ) == canonical_json(entry.args):
                    self.state.plan_step += 1

    def provenance(self, args: Any) -> tuple[Provenance, ...]:
        out = []
        for path, leaf in _leaves(args):
            if isinstance(leaf, bool) or leaf is None:
                continue
            srcs: list[str] = []
            for t in sorted(leaf_keys(leaf)):
                for s in self.state.sources.get(t, ()):
                    if s not in srcs:
                        srcs.append(s)
            out.append(Provenance(path=path, value=leaf, sources=tuple(srcs)))
        return tuple(out)

    def broken_at(self) -> int | None:
        """The index of the first entry that breaks the chain, or ``None`` when it is intact.

        Entries already verified are remembered by identity (entries are frozen), so a long
        session is verified once and each new entry costs one hash.
        """
        entries = self.state.entries
        ok = 0
        while ok < len(self._verified) and ok < len(entries) and entries[ok] is self._verified[ok]:
            ok += 1
        prev = entries[ok - 1].entry_hash if ok else self.state.base_hash
        for pos in range(ok, len(entries)):
            e = entries[pos]
            if (
                e.index != self.state.dropped + pos
                or e.prev_hash != prev
                or not entry_intact(self.state.session_id, e)
            ):
                del self._verified[pos:]
                return pos
            prev = e.entry_hash
        self._verified = list(entries)
        return None

    def view(
        self,
        *,
        tool: str,
        args: Any,
        now: float,
        related: tuple[int, ...] = (),
        compensation_of: int | None = None,
        confirmation: Any = None,
        confirmed_args: dict[str, Any] | None = None,
    ) -> SessionView:
        """The bounded slice a check of ``tool(args)`` reads.

        Args:
            tool: The tool being called.
            args: Its arguments (their provenance is looked up).
            now: Workflow time, seconds since the epoch.
            related: Indices of entries a check needs besides the usual ones.
            compensation_of: The index of the step this call undoes, for an undo.
            confirmation: A person's signed yes for this call (a ``Decision`` or its dict).
            confirmed_args: The arguments the yes was given for, where the person edited them.
        """
        entries = self.state.entries
        picked: dict[int, LedgerEntry] = {e.index: e for e in entries[-RECENT:]}
        latest: dict[str, LedgerEntry] = {}
        same: list[LedgerEntry] = []
        turn = len(self.state.turns) - 1
        undone_by: list[int] = []
        for e in reversed(entries):
            if e.tool == tool and len(same) < SAME_TOOL:
                same.append(e)
            if e.ran and e.tool not in latest and len(latest) < LATEST_PER_TOOL:
                latest[e.tool] = e
            if e.turn == turn and turn >= 0 and len(picked) < RECENT + SAME_TOOL:
                picked[e.index] = e
            if compensation_of is not None and e.compensation_of == compensation_of and e.ran:
                undone_by.append(e.index)
        picked.update({e.index: e for e in same})
        picked.update({e.index: e for e in latest.values()})
        wanted = [*related, *undone_by[:4]] + (
            [compensation_of] if compensation_of is not None else []
        )
        first = self.state.dropped
        for i in wanted:
            if first <= i < first + len(entries):
                picked[i] = entries[i - first]
        extra: dict[str, Any] = {
            "turn_index": turn,
            "sums": {k: dict(v) for k, v in self.state.sums.items()},
        }
        broken = self.broken_at()
        if broken is not None:
            extra["chain_break"] = broken
        if self.state.plan is not None:
            extra["plan"] = {"token": self.state.plan, "step": self.state.plan_step}
        if compensation_of is not None:
            extra["compensation_of"] = compensation_of
            extra["undone_by"] = sorted(undone_by)
        if confirmation is not None:
            extra["confirmation"] = (
                confirmation.model_dump(mode="json")
                if hasattr(confirmation, "model_dump")
                else dict(confirmation)
            )
            if confirmed_args is not None:
                extra["confirmed_args"] = confirmed_args
        if self.state.used_nonces:
            extra["used_nonces"] = list(self.state.used_nonces)
        return SessionView(
            session_id=self.state.session_id,
            calls=self.state.dropped + len(entries),
            chain_head=self.head,
            tool_counts=dict(
                Counter(e.tool for e in entries if e.ran) + Counter(self.state.dropped_counts)
            ),
            entries=tuple(picked[i] for i in sorted(picked)),
            labels_seen=tuple(self.state.labels_seen),
            turns=tuple(self.state.turns[-1:]),
            provenance=self.provenance(args),
            now=now,
            extra=extra,
        )


def _said(text: str) -> set[str]:
    # Imported here: the reader lives with the policy, and the policy imports this module.
    from .checks.policy.values import read

    return read(text).all()


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
