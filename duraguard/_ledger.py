"""The session ledger the workflow keeps: calls, verdicts, result digests, labels, a hash chain.

Pure and deterministic (it runs inside workflow code). Each check gets a bounded
:class:`SessionView` of it, never the whole transcript, so history grows with the call and not
with the session; building a view costs the same at call 10 and at call 10,000 (the indexes
below are kept as entries are recorded). The chain binds every entry to the one before and to
the session id: an entry edited, reordered or carried over from another session breaks it, and
every call after the break is refused by the policy's session record check.
"""

from __future__ import annotations

import math
import sys
from collections import Counter, deque
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._chain import chain_hash, entry_intact, first_break
from ._dates import offsets, relative_dates
from ._derived import Basis, as_float
from ._provenance import said
from ._result_keys import ResultKeys
from ._sourceindex import SourceIndex
from ._sources import Sources
from ._types import LedgerEntry, PlanState, SessionView, ToolRecord, canonical_json, digest
from ._workings import day_of

RECENT = 8
"""The last calls every view carries."""
SAME_TOOL = 16
"""The last calls of the tool being checked (for limits per period and order rules)."""
LATEST_PER_TOOL = 12
"""The latest ran call of this many distinct tools (for rules over earlier results)."""
MAX_RESULT_FIELDS = 16
MAX_NONCES = 256
"""Decisions remembered as used, carried across continue-as-new (a decision is also bound to
the run and to the ask it answers, so an older one cannot verify anyway)."""
MAX_CARRIED_ENTRY_BYTES = 192 * 1024
"""The most the entries kept across continue-as-new take (JSON): however large the arguments
of the latest calls, the carried session stays schedulable (a payload is at most 2 MiB)."""
TURNS_KEPT = 4
"""The person's latest turns carried across continue-as-new (a view shows the last one)."""
MAX_SUM_FIELDS = 64
"""Numeric arguments summed per tool (a tool takes a few; a model inventing names of
arguments, call after call, must not grow the session without bound)."""


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


def _saturated(total: float) -> float:
    """A running total kept finite: past the largest float it stays there (a limit on it then
    refuses), where ``inf`` would make the session view unreadable and wedge the run."""
    return total if math.isfinite(total) else math.copysign(sys.float_info.max, total)


class LedgerState(BaseModel):
    """The ledger as carried across continue-as-new."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    entries: list[LedgerEntry] = Field(default_factory=list)
    turns: list[str] = Field(default_factory=list)
    labels_seen: list[str] = Field(default_factory=list)
    sources: SourceIndex = Field(default_factory=SourceIndex)
    """Where each value was seen (``turn:i``, ``result:j``, ``prompt``, ``outside:...``),
    bounded in size (see :mod:`duraguard._provenance`)."""
    base_hash: str = ""
    """Hash of the entries dropped when the ledger was compacted (continue-as-new)."""
    sums: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per tool, the running total of each numeric top-level argument of the calls that ran."""
    plan: dict[str, Any] | None = None
    """The signed plan a person approved (a :class:`PlanToken` as a dict), if any."""
    plan_step: int = 0
    """How many of the plan's steps have run."""
    used_nonces: list[str] = Field(default_factory=list)
    turns_dropped: int = 0
    """How many of the person's earliest turns were compacted away: ``turns[0]``'s index."""
    dropped_counts: dict[str, int] = Field(default_factory=dict)
    """Per tool, the calls that ran in entries compacted away (they still count for order rules)."""
    dropped: int = 0
    """How many entries were compacted away: the first kept entry's index."""


class Ledger:
    """The session record of one agent run (workflow side)."""

    def __init__(self, state: LedgerState) -> None:
        self._state = state
        self.sources = Sources(state.sources, entry=self._at)
        self._reindex()

    @property
    def state(self) -> LedgerState:
        """The carried form (its provenance index with every value noted so far)."""
        self.sources.flush()
        return self._state

    @property
    def used_nonces(self) -> list[str]:
        """Nonces of the decisions and plans already used (read without working out the
        provenance index, which :attr:`state` would)."""
        return self._state.used_nonces

    @classmethod
    def new(cls, session_id: str) -> Ledger:
        return cls(LedgerState(session_id=session_id))

    # -- indexes (derived from the entries, never carried) --------------------------------
    def _reindex(self) -> None:
        self._counts: Counter[str] = Counter(self._state.dropped_counts)
        self._same: dict[str, deque[int]] = {}
        self._latest: dict[str, int] = {}
        self._by_turn: dict[int, list[int]] = {}
        self._undone: dict[int, list[int]] = {}
        self._verified = 0
        self._broken: int | None = None
        for e in self._state.entries:
            self._index(e)

    def _index(self, e: LedgerEntry) -> None:
        self._same.setdefault(e.tool, deque(maxlen=SAME_TOOL)).append(e.index)
        self._by_turn.setdefault(e.turn, []).append(e.index)
        if e.ran:
            self._counts[e.tool] += 1
            self._latest.pop(e.tool, None)
            self._latest[e.tool] = e.index  # insertion order: most recent last
            if e.compensation_of is not None:
                self._undone.setdefault(e.compensation_of, []).append(e.index)

    def _at(self, index: int) -> LedgerEntry | None:
        pos = index - self._state.dropped
        entries = self._state.entries
        return entries[pos] if 0 <= pos < len(entries) else None

    @property
    def head(self) -> str:
        return self._state.entries[-1].entry_hash if self._state.entries else self._state.base_hash

    @property
    def calls(self) -> int:
        return self._state.dropped + len(self._state.entries)

    @property
    def turn(self) -> int:
        """The index of the person's latest turn (``-1``: none yet)."""
        return self._state.turns_dropped + len(self._state.turns) - 1

    # -- writing -----------------------------------------------------------------------
    def add_prompt(self, text: str) -> None:
        self.sources.note(text, "prompt", said(text))

    def add_turn(self, text: str) -> None:
        self._state.turns.append(text)
        self.sources.note(text, f"turn:{self.turn}", said(text))

    def accept_plan(self, token: Any) -> None:
        """Start following a plan a person approved (a signed :class:`PlanToken` or its dict)."""
        data = token.model_dump(mode="json") if hasattr(token, "model_dump") else dict(token)
        self._state.plan = data
        self._state.plan_step = 0

    def use_nonce(self, nonce: str) -> None:
        """Remember a person's decision as used, so the same yes cannot be replayed."""
        if nonce not in self._state.used_nonces:
            self._state.used_nonces.append(nonce)
            del self._state.used_nonces[:-MAX_NONCES]

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
        keys: ResultKeys | None = None,
    ) -> LedgerEntry:
        """Record one call; ``keys``: its result's keys as its tool's step worked them out
        (:mod:`duraguard._result_keys`)."""
        entry = LedgerEntry(
            index=self.calls,
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
            turn=self.turn,
            prev_hash=self.head,
        )
        entry = entry.model_copy(
            update={"entry_hash": chain_hash(self.head, self._state.session_id, entry)}
        )
        self._state.entries.append(entry)
        self._index(entry)
        if ran:
            self._ran(entry, result, labels, keys)
        return entry

    def _ran(
        self, entry: LedgerEntry, result: Any, labels: tuple[str, ...], keys: ResultKeys | None
    ) -> None:
        if entry.ok:
            # A failure's text (an error message, which may quote what the call was sent) is
            # nobody's word for a value: only its labels, if any, are noted below.
            self.sources.note(result, f"result:{entry.index}", keys=keys)
        for label in labels:
            self.sources.note(result, f"outside:{label}")
            if label not in self._state.labels_seen:
                self._state.labels_seen.append(label)
        sums = self._state.sums.setdefault(entry.tool, {})
        for k, v in entry.args.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                if k in sums or len(sums) < MAX_SUM_FIELDS:
                    f = as_float(v)
                    f = (sys.float_info.max if v > 0 else -sys.float_info.max) if f is None else f
                    sums[k] = _saturated(sums.get(k, 0.0) + f)
        plan = self._state.plan
        if plan and entry.ok:
            steps = plan.get("steps") or []
            if self._state.plan_step < len(steps):
                step = steps[self._state.plan_step]
                if step.get("tool") == entry.tool and canonical_json(
                    step.get("args", {})
                ) == canonical_json(entry.args):
                    self._state.plan_step += 1

    def compact(self, keep: int = 64, *, max_bytes: int = MAX_CARRIED_ENTRY_BYTES) -> None:
        """Drop all but the last ``keep`` entries, and as many more of the oldest as it takes to
        bring the kept ones under ``max_bytes`` (before continue-as-new); keep the person's last
        :data:`TURNS_KEPT` turns.

        The chain stays checkable: ``base_hash`` becomes the hash of the last dropped entry, so
        the kept entries still verify from it, and counts of what ran are kept per tool.
        """
        self.sources.flush()  # a result is noted with its own call's entry, before it goes
        entries = self._state.entries
        if keep < 0:
            raise ValueError(f"keep must be >= 0; got {keep}")
        kept, used = 0, 0
        for e in reversed(entries[len(entries) - keep :] if keep else []):
            used += len(e.model_dump_json())
            if used > max_bytes:
                break
            kept += 1
        if len(entries) > kept:
            dropped = entries[: len(entries) - kept]
            counts = Counter(self._state.dropped_counts)
            counts.update(e.tool for e in dropped if e.ran)
            self._state.dropped_counts = dict(counts)
            self._state.base_hash = dropped[-1].entry_hash
            self._state.dropped += len(dropped)
            self._state.entries = entries[len(entries) - kept :]
            self._reindex()
        extra = len(self._state.turns) - TURNS_KEPT
        if extra > 0:
            del self._state.turns[:extra]
            self._state.turns_dropped += extra

    # -- reading -----------------------------------------------------------------------
    def _basis(self, now: float) -> Basis:
        """What a call's values may be worked out from: the person's latest turn, the results
        of the calls made since, and the day offsets and relative days that turn says."""
        turn = self.turn
        if turn < 0:
            return Basis(turn="")
        text = self._state.turns[-1] if self._state.turns else ""
        said = offsets(text)
        today = day_of(now) if said else ""
        return Basis(
            turn=f"turn:{turn}",
            calls=frozenset(self._by_turn.get(turn, ())),
            offsets=frozenset(said),
            days=frozenset(relative_dates(text, today)) if today else frozenset(),
        )

    def verify(self) -> int | None:
        """The position of the first entry that breaks the chain, or ``None`` when intact."""
        return first_break(self._state.session_id, self._state.entries, self._state.base_hash)

    def broken_at(self) -> int | None:
        """Like :meth:`verify`, incrementally: entries are append-only, so each is hashed once."""
        if self._broken is not None:
            return self._broken
        entries = self._state.entries
        prev = entries[self._verified - 1].entry_hash if self._verified else self._state.base_hash
        for pos in range(self._verified, len(entries)):
            e = entries[pos]
            if (
                e.index != self._state.dropped + pos
                or e.prev_hash != prev
                or not entry_intact(self._state.session_id, e)
            ):
                self._broken = pos
                return pos
            prev = e.entry_hash
        self._verified = len(entries)
        return None

    def view(
        self,
        *,
        tool: str,
        args: Any,
        now: float,
        related: tuple[int, ...] = (),
        compensation_of: int | None = None,
        results: tuple[ToolRecord, ...] = (),
    ) -> SessionView:
        """The bounded slice a check of ``tool(args)`` reads.

        Args:
            tool: The tool being called.
            args: Its arguments (their provenance is looked up).
            now: Workflow time, seconds since the epoch.
            related: Indices of entries a check needs besides the usual ones.
            compensation_of: The index of the step this call undoes, for an undo.
            results: The last few tool results, for a validation guardrail.
        """
        entries = self._state.entries
        picked: dict[int, LedgerEntry] = {e.index: e for e in entries[-RECENT:]}
        turn = self.turn
        if turn >= 0:
            for i in reversed(self._by_turn.get(turn, ())):
                if len(picked) >= RECENT + SAME_TOOL:
                    break
                e = self._at(i)
                if e is not None:
                    picked[i] = e
        latest = sorted(self._latest.values())[-LATEST_PER_TOOL:]
        undone = self._undone.get(compensation_of, []) if compensation_of is not None else []
        wanted = [*self._same.get(tool, ()), *latest, *related, *undone[:4]]
        if compensation_of is not None:
            wanted.append(compensation_of)
        for i in wanted:
            e = self._at(i)
            if e is not None:
                picked[i] = e
        plan = self._state.plan
        return SessionView(
            session_id=self._state.session_id,
            calls=self.calls,
            chain_head=self.head,
            tool_counts={k: v for k, v in self._counts.items() if v},
            entries=tuple(picked[i] for i in sorted(picked)),
            labels_seen=tuple(self._state.labels_seen),
            addressed=self.sources.addressed,
            pressed=self.sources.pressed,
            turns=tuple(self._state.turns[-1:]),
            turn_index=turn,
            provenance=self.sources.lookup(args, tool)
            + self.sources.worked_out(args, self._basis(now)),
            now=now,
            sums={k: dict(v) for k, v in self._state.sums.items()},
            chain_break=self.broken_at(),
            plan=PlanState(token=plan, step=self._state.plan_step) if plan is not None else None,
            compensation_of=compensation_of,
            undone_by=tuple(sorted(undone)),
            results=results,
        )
