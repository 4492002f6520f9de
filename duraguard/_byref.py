"""Sent once, then by reference: what a run's steps need not carry again.

A run's inline checks and model steps carry the guardrails they judge with, the session entries
a check reads and the person's latest turn in full once, and after that by reference: the
guardrails by the digest of their canonical JSON (:func:`specs_ref`), the entries by their
indices under the digest of their hashes (:func:`entries_digest`), the turns by their digest
(:func:`turns_digest`); each reference is :func:`digest` of one text.

* The workflow side remembers what its run's workers were sent (:class:`Sent`, one per run, in
  its :class:`~duraguard._state.SessionState`): :meth:`Sent.unsent` leaves out of a view what
  was sent before, :meth:`Sent.by_ref` says whether a list of guardrails may go by reference,
  :meth:`Sent.took` notes what a step took in full, :meth:`Sent.forget` is the answer to a
  worker that lacked something.
* The worker side keeps what it was sent (:class:`Seen`: :class:`SeenEntries` and
  :class:`SeenSpecs`, bounded) and works every reference out itself from what it received,
  never taking one on trust: a step naming something it does not hold judges nothing and says
  so, and the workflow sends everything in full again.

Pure: no Temporal, no checks.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._types import LedgerEntry, SessionView, canonical_json
from .guardrail import GuardrailSpec


def digest(text: str) -> str:
    """The one digest every reference is: SHA-256 of ``text`` (UTF-8), hex."""
    return hashlib.sha256(text.encode()).hexdigest()


def turns_digest(turns: Sequence[str]) -> str:
    """The reference of the person's turns a session view carries."""
    return digest(canonical_json(list(turns)))


def entries_digest(hashes: Sequence[str]) -> str:
    """The digest of a list of session entries' hashes: what entries named by index must be."""
    return digest("\n".join(hashes))


_SPECS: dict[tuple[int, ...], tuple[tuple[GuardrailSpec, ...], str, str]] = {}
"""The canonical JSON of a list of specs and its reference, by the specs' identities (each entry
holds its specs, so an identity is not reused while it is here): a loop passes the same specs
call after call. Every run has specs of its own (decoded from its input), a few lists each:
:data:`MAX_SPECS_KNOWN` keeps those of a thousand runs at once (a few MB)."""
MAX_SPECS_KNOWN = 4096


def _specs_known(specs: Sequence[GuardrailSpec]) -> tuple[str, str]:
    key = tuple(id(s) for s in specs)
    hit = _SPECS.get(key)
    if hit is not None:
        return hit[1], hit[2]
    text = canonical_json([s.model_dump(mode="json") for s in specs])
    ref = digest(text)
    if len(_SPECS) >= MAX_SPECS_KNOWN:
        _SPECS.clear()
    _SPECS[key] = (tuple(specs), text, ref)  # (runs on several workflow threads: no read-back)
    return text, ref


def specs_json(specs: Sequence[GuardrailSpec]) -> str:
    """The canonical JSON of a list of specs (their dumps), worked out once per list."""
    return _specs_known(specs)[0]


def specs_ref(specs: Sequence[GuardrailSpec]) -> str:
    """The reference a list of specs is sent by once a step of the run was sent it in full."""
    return _specs_known(specs)[1]


# -- the workflow side: what a run sent ------------------------------------------------------

MAX_SENT = 4096
"""References a run remembers as sent, of each kind (past it, it starts again: all in full)."""


@dataclass(frozen=True)
class Unsent:
    """A session view as a step is sent it: without what a step of this run was shown."""

    view: SessionView | None
    at: tuple[int, ...] = ()
    """The indices of the entries left out."""
    digest: str = ""
    """The digest of their hashes, which binds the worker to those very entries."""
    turns: str = ""
    """The digest of the person's turns, where they were left out too."""


@dataclass
class Sent:
    """What a run's workers were sent in full: entries by hash, guardrails by reference, the
    person's turns by digest (workflow-side memory; a replay rebuilds it as the run did)."""

    entries: set[str] = field(default_factory=set)
    specs: set[str] = field(default_factory=set)
    turns: set[str] = field(default_factory=set)
    _last_turns: tuple[tuple[str, ...], str] | None = field(default=None, repr=False)

    def turns_digest(self, turns: tuple[str, ...]) -> str:
        """:func:`turns_digest`, worked out once for the same text (each view is handed the
        same string objects until the person speaks again)."""
        last = self._last_turns
        if last is not None and len(last[0]) == len(turns):
            if all(a is b for a, b in zip(last[0], turns, strict=True)):
                return last[1]
        found = turns_digest(turns)
        self._last_turns = (turns, found)
        return found

    def by_ref(self, specs: Sequence[GuardrailSpec]) -> tuple[str, bool]:
        """The reference of ``specs``, and whether the run's workers hold them (send the
        reference alone) or not (send them in full)."""
        ref = specs_ref(specs)
        return ref, ref in self.specs

    def unsent(self, view: SessionView | None) -> Unsent:
        """``view`` without the entries and the turn a step of this run was shown before."""
        if view is None:
            return Unsent(None)
        update: dict[str, Any] = {}
        at: tuple[int, ...] = ()
        bound = turns = ""
        if self.entries:
            left = tuple(e for e in view.entries if e.entry_hash not in self.entries)
            if len(left) != len(view.entries):
                taken = [e for e in view.entries if e.entry_hash in self.entries]
                at = tuple(e.index for e in taken)
                bound = entries_digest([e.entry_hash for e in taken])
                update["entries"] = left
        if view.turns:
            said = self.turns_digest(view.turns)
            if said in self.turns:
                turns = said
                update["turns"] = ()
        return Unsent(view.model_copy(update=update) if update else view, at, bound, turns)

    def took(
        self, *, specs: Sequence[GuardrailSpec] | None = None, view: SessionView | None = None
    ) -> None:
        """A step took ``specs`` and ``view`` (as it was sent): later steps name them by
        reference."""
        if specs is not None:
            if len(self.specs) >= MAX_SENT:
                self.specs.clear()
            self.specs.add(specs_ref(specs))
        if view is not None:
            if len(self.entries) > MAX_SENT:
                self.entries.clear()
            self.entries.update(e.entry_hash for e in view.entries)
            if view.turns:
                if len(self.turns) >= MAX_SENT:
                    self.turns.clear()
                self.turns.add(self.turns_digest(view.turns))

    def forget(self, *, specs_only: bool = False) -> None:
        """A worker lacked something a step named: nothing sent is taken as held now (the
        guardrails alone, ``specs_only``, where a step names nothing else)."""
        self.specs.clear()
        if not specs_only:
            self.entries.clear()
            self.turns.clear()


# -- the worker side: what a worker was sent -------------------------------------------------

MAX_SEEN_ENTRIES = 16_384
"""Session entries a worker keeps for inline checks (about 0.5 KB to a few KB each), ..."""
MAX_SEEN_ENTRY_BYTES = 64 * 1024 * 1024
"""... and at most this many bytes of them in all (their JSON): a session whose calls carry
megabytes of arguments costs the worker memory it can spare, not whatever the calls weigh."""
MAX_SEEN_TURNS = 4096
"""Sessions' latest turns a worker keeps for inline checks (one per session and turn), ..."""
MAX_SEEN_TURN_CHARS = 32 * 1024 * 1024
"""... and at most this many characters of them in all."""
MAX_SEEN_SPECS = 1024
"""Lists of guardrail specs a worker keeps for inline checks (about 1 KB each), ..."""
MAX_SEEN_SPEC_BYTES = 16 * 1024 * 1024
"""... and at most this many bytes of them in all (a rule sheet can make a list large)."""


class SeenEntries:
    """Session entries this worker's checks were shown, by session and index (most recent
    :data:`MAX_SEEN_ENTRIES`): an inline check is sent only the entries it has not seen."""

    def __init__(self) -> None:
        self._at: OrderedDict[tuple[str, int], tuple[LedgerEntry, int]] = OrderedDict()
        self._bytes = 0
        self._turns: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self._turn_chars = 0

    @property
    def bytes_kept(self) -> int:
        """The JSON bytes of the entries kept."""
        return self._bytes

    def remember(self, view: SessionView | None, *, turns_sent: bool = True) -> None:
        """Keep ``view``'s entries, and its turns where they came in full (``turns_sent``)."""
        if view is None:
            return
        if turns_sent and view.turns:
            self._keep_turns(view.session_id, view.turns)
        for e in view.entries:
            key = (view.session_id, e.index)
            before = self._at.get(key)
            if before is not None and before[0].entry_hash == e.entry_hash:
                self._at.move_to_end(key)  # kept already (put back from here): not sized again
                continue
            size = len(e.model_dump_json())
            if before is not None:
                del self._at[key]
                self._bytes -= before[1]
            self._at[key] = (e, size)
            self._bytes += size
        while len(self._at) > MAX_SEEN_ENTRIES or self._bytes > MAX_SEEN_ENTRY_BYTES:
            _, (_, size) = self._at.popitem(last=False)
            self._bytes -= size

    def _keep_turns(self, session_id: str, turns: tuple[str, ...]) -> None:
        key = (session_id, turns_digest(turns))
        if key in self._turns:
            self._turns.move_to_end(key)
            return
        self._turns[key] = turns
        self._turn_chars += sum(map(len, turns))
        while len(self._turns) > MAX_SEEN_TURNS or self._turn_chars > MAX_SEEN_TURN_CHARS:
            _, dropped = self._turns.popitem(last=False)
            self._turn_chars -= sum(map(len, dropped))

    def with_turns(self, view: SessionView | None, digest: str) -> SessionView | None:
        """``view`` with the person's turns ``digest`` names put back; ``None`` if this worker
        was never shown them."""
        if view is None:
            return None
        turns = self._turns.get((view.session_id, digest))
        if turns is None:
            return None
        self._turns.move_to_end((view.session_id, digest))
        return view.model_copy(update={"turns": turns})

    def restore_at(
        self, view: SessionView | None, indices: Sequence[int], digest: str
    ) -> SessionView | None:
        """``view`` with the entries at ``indices`` put back, in order; ``None`` if one is
        unknown, or if the ones known are not those whose hashes make ``digest`` (another run
        under the same workflow id, say). Each is checked again by the guardrails that read it:
        its hash binds its content."""
        if view is None:
            return None
        found = [self._at.get((view.session_id, i)) for i in indices]
        known = [kept[0] for kept in found if kept is not None]
        if len(known) != len(found) or entries_digest([e.entry_hash for e in known]) != digest:
            return None
        return _merged(view, known)

    def restore(self, view: SessionView | None, hashes: Sequence[str]) -> SessionView | None:
        """The same for a step that names the entries by hash (scheduled by an earlier version)."""
        if view is None:
            return None
        mine = {e.entry_hash: e for (s, _), (e, _) in self._at.items() if s == view.session_id}
        found = [mine.get(h) for h in hashes]
        known = [e for e in found if e is not None]
        return _merged(view, known) if len(known) == len(found) else None


def _merged(view: SessionView, entries: Sequence[LedgerEntry]) -> SessionView:
    return view.model_copy(update={"entries": tuple(sorted([*view.entries, *entries], key=_index))})


class SeenSpecs:
    """Lists of guardrail specs this worker's inline checks were sent in full, by the reference
    it worked out itself (:func:`specs_ref`; most recent
    :data:`MAX_SEEN_SPECS`): a later step of the run sends only the reference."""

    def __init__(self) -> None:
        self._by_ref: OrderedDict[str, tuple[tuple[GuardrailSpec, ...], int]] = OrderedDict()
        self._bytes = 0

    @property
    def bytes_kept(self) -> int:
        """The canonical JSON bytes of the lists kept."""
        return self._bytes

    def remember(self, specs: tuple[GuardrailSpec, ...]) -> None:
        text = canonical_json([s.model_dump(mode="json") for s in specs])
        ref = digest(text)
        if ref in self._by_ref:
            self._by_ref.move_to_end(ref)
            return
        self._by_ref[ref] = (specs, len(text))
        self._bytes += len(text)
        while len(self._by_ref) > MAX_SEEN_SPECS or self._bytes > MAX_SEEN_SPEC_BYTES:
            _, (_, size) = self._by_ref.popitem(last=False)
            self._bytes -= size

    def restore(self, ref: str) -> tuple[GuardrailSpec, ...] | None:
        kept = self._by_ref.get(ref)
        if kept is None:
            return None
        self._by_ref.move_to_end(ref)
        return kept[0]


def _index(e: LedgerEntry) -> int:
    return e.index


@dataclass
class Seen:
    """What one worker's checks were sent: session entries and turns, and guardrail lists."""

    entries: SeenEntries = field(default_factory=lambda: SeenEntries())
    specs: SeenSpecs = field(default_factory=lambda: SeenSpecs())

    def specs_of(
        self, sent: tuple[GuardrailSpec, ...], ref: str
    ) -> tuple[GuardrailSpec, ...] | None:
        """The guardrails a step judges with: ``sent`` in full (kept for the run's later
        steps), or those ``ref`` names, where this worker worked that reference out itself
        (``None`` where it never did: another worker, a restart)."""
        if not ref:
            self.specs.remember(sent)
            return sent
        return self.specs.restore(ref)

    def view_of(
        self,
        view: SessionView | None,
        *,
        at: Sequence[int] = (),
        bound: str = "",
        hashes: Sequence[str] = (),
        turns: str = "",
    ) -> tuple[bool, SessionView | None]:
        """``view`` with what a step left out put back (the entries at ``at``, whose hashes
        make ``bound``, or named by ``hashes``; the turns ``turns`` names), and kept for later
        steps; ``(False, None)`` where something it names is not held here."""
        if at or hashes:
            view = (
                self.entries.restore_at(view, at, bound)
                if at
                else self.entries.restore(view, hashes)
            )
            if view is None:
                return False, None
        if turns:
            view = self.entries.with_turns(view, turns)
            if view is None:
                return False, None
        self.entries.remember(view, turns_sent=not turns)
        return True, view
