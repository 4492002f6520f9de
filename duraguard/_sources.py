"""The provenance index: every value a session saw, under the source it came from, bounded.

Keys come from :mod:`duraguard._provenance` (what a text or a value is looked up under); this
module notes them per source, in :mod:`duraguard._sourcestore` (which evicts what no longer
fits, only ever making answers stricter: trusted sources first, outside content last, into a
Bloom filter that never forgets a taint), and answers where each of a call's values was seen
(:meth:`Sources.lookup`).

Provenance follows data, not strings: a trusted tool's result is trusted only where every
value its call was given came from the person or from trusted results. A call given a value
seen only in outside content (whole, in part, or word by word), or one nobody gave once outside
content entered the session, gives a result that is itself outside content (flag ``via``):
whatever the tool did to the value (spacing, case, decoding, a "not found" text), its answer
cannot vouch for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._derived import numbers_in
from ._imperatives import tool_words
from ._links import from_prose
from ._noting import echoes, marks_of_rest, outside_notes, person_keys, trusted_keys
from ._outside_keys import outside_taken, with_inherited
from ._provenance import (
    _WORDS,
    EVICTED,
    MAX_INDEX_BYTES,
    MAX_PARTS_SHOWN,
    MAX_SOURCES_SHOWN,
    UNREAD,
    _destination_keys,
    _plain,
    _prose,
    clipped,
    last_name,
    leaves,
    part_keys,
    parts,
    value_keys,
)
from ._rest_flags import rest_taken
from ._result_keys import ResultKeys, taken
from ._sourceindex import SourceIndex
from ._sourcestore import SourceStore
from ._tiny import role_words, tiny, tiny_keys, untraceable
from ._types import Provenance
from ._workings import day_of

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
MAX_HOPS = 4
"""Earlier outside content a read is noted as reached by (``by-<j>``), at most."""
MAX_BACKLOG = 8
"""Values noted and not yet worked into the index, at most (then they are). Small: a replay
reads no index, so works the notes in as it goes; with thousands waiting, the next task to read
it worked in a run's results at once, past the SDK's 2 s limit when busy."""


class Sources(SourceStore):
    """The provenance index: token -> where it was seen, bounded (see the module docstring).

    Args:
        state: The carried form, kept up to date as values are noted (the ledger seals it).
        entry: The ledger entry of call ``j`` (its tool, arguments and labels), so a result is
            noted as trusted or outside content and never vouches for its own call's values.
        budget: The most :attr:`state` may take serialised, in bytes.
    """

    def __init__(
        self,
        state: SourceIndex,
        *,
        entry: Callable[[int], Any] | None = None,
        budget: int = MAX_INDEX_BYTES,
    ) -> None:
        self._entry = entry
        self._outside_noted: set[str] = set()  # labels of a result just noted as outside
        self._backlog: list[tuple[Any, str, set[str] | None, ResultKeys | None]] = []
        """What :meth:`note` was given and :meth:`flush` has not worked in yet, in order."""
        super().__init__(state, budget=budget)

    # -- writing -------------------------------------------------------------------------
    def note(
        self,
        value: Any,
        source: str,
        extra: set[str] | None = None,
        *,
        keys: ResultKeys | None = None,
    ) -> None:
        """Remember every value in ``value`` (and the typed values in ``extra``) as seen at
        ``source``. A result (``result:<j>``) is noted as outside content where call ``j``'s
        tool labels its results; the ledger's separate ``outside:<label>`` note of that same
        result is then already done. ``keys``: a trusted result's keys as its tool's step worked
        them out (:mod:`duraguard._result_keys`), taken where they match what call ``j``'s entry
        records, else read again here.

        The work is done when the index is next read (:meth:`lookup`, :attr:`state`), in the
        order noted, or once :data:`MAX_BACKLOG` notes wait.
        """
        self._backlog.append((value, source, extra, keys))
        if len(self._backlog) >= MAX_BACKLOG:
            self.flush()

    def flush(self) -> None:
        """Note what :meth:`note` was given and not yet noted."""
        if not self._backlog:
            return
        backlog, self._backlog = self._backlog, []
        for value, source, extra, keys in backlog:
            self._note(value, source, extra, keys)

    def _note(
        self, value: Any, source: str, extra: set[str] | None, keys: ResultKeys | None = None
    ) -> None:
        if source.startswith("outside:"):
            label = source.split(":", 1)[1]
            if label in self._outside_noted:
                self._outside_noted.discard(label)
                return
            kept, whole = clipped(value)
            rest = self._read_in_part(value, whole, None)
            self._add_all(outside_notes(kept, f"outside:{label}", set(), inherited=rest))
            return
        self._outside_noted = set()
        if not source.startswith("result:"):
            value, _ = clipped(value)
            person = source == "prompt" or source.startswith("turn:")
            self._add(source, person_keys(value, extra if person else None) | (extra or set()))
            said = [float(k) for k in extra or () if len(k) <= 16 and _NUMBER.fullmatch(k)]
            self._keep_numbers(source, said)
            return
        j = int(source.split(":", 1)[1])
        e = self._entry(j) if self._entry is not None else None
        labels = tuple(getattr(e, "labels", ()) or ())
        args = getattr(e, "args", {}) or {}
        day = day_of(getattr(e, "at", None))
        taint = None if labels else self._taint(args)  # a tainted call's result is outside too
        got = taken(keys, e, day) if (trusted := not labels and taint is None) else None
        listing = (value, e, keys if got else None) if trusted else None
        if got is not None and got[1] is not None:  # keys and numbers: the result is not read
            self._add_hashes(source, got[0], ordered=True)
            self._keep_numbers(source, got[1])
            return self._listed(listing)
        raw, (value, whole) = value, clipped(value)
        read = rest_taken(keys.rest, e) if keys is not None and not whole else None
        if labels:
            rest = self._read_in_part(raw, whole, read)
            self._outside_noted = set(labels)
            by = self._reached_by(args)
            base = f"outside:{'+'.join(labels)}:{j}" + (
                f":by-{'-'.join(map(str, by))}" if by else ""
            )
            self._as_outside(value, base, (args, rest, day), keys, e)
            return
        if taint is not None:
            names, flags = taint
            base = f"outside:{'+'.join(names)}:{j}:via" + (
                ":from-prose" if "prose" in flags else ""
            )
            inherited = tuple(f for f in flags if f != "prose")
            inherited += self._read_in_part(raw, whole, read)
            self._as_outside(value, base, (args, inherited, day), keys, e)
            return
        if got is None:
            self._add(source, trusted_keys(value, args, str(getattr(e, "tool", "")), day))
        else:
            self._add_hashes(source, got[0], ordered=True)
        self._keep_numbers(source, [x for found in numbers_in(value) for x in found])
        self._listed(listing)

    def _as_outside(
        self, value: Any, base: str, read: tuple[Any, tuple[str, ...], str], keys: Any, e: Any
    ) -> None:
        """Note ``value`` as outside content under ``base``, from ``read``: its call's arguments,
        the flags it inherits and the day it came. As its worker noted it where that is bound to
        what entry ``e`` records (:mod:`duraguard._outside_keys`: the flags it inherits from the
        content its call was given values from are known only here), else read here."""
        args, inherited, day = read
        sent = outside_taken(keys.outside if keys is not None else None, e, day)
        if sent is not None:
            notes, prose, fields = sent
            self._add_sent(
                base, [(with_inherited(n, inherited), h) for n, h in notes], prose, fields
            )
            return
        self._add_all(outside_notes(value, base, echoes(args), inherited=inherited, day=day), value)

    def _read_in_part(
        self, value: Any, whole: bool, read: tuple[str, ...] | None
    ) -> tuple[str, ...]:
        """Outside content noted: where only part of it was read (:func:`clipped`), mark the
        index and return the flags any of it carries, its unread rest included (``read``: as
        its tool's step read them, :mod:`duraguard._rest_flags`)."""
        if whole:
            return ()
        self._state.unread = True
        return marks_of_rest(value) if read is None else read

    @property
    def addressed(self) -> tuple[int, ...]:
        """Calls whose outside content addressed an AI agent (``<INFORMATION>``, "ignore your
        previous instructions"), the latest :data:`MAX_ADDRESSED`; ``-1`` for content whose
        call is not known. Kept however the index evicts."""
        self.flush()
        return tuple(self._state.addressed)

    @property
    def pressed(self) -> tuple[int, ...]:
        """Calls whose outside content pressed an order ("you must", "urgent", or addressed an
        agent), kept as :attr:`addressed` is."""
        self.flush()
        return tuple(self._state.pressed)

    # -- data flow -----------------------------------------------------------------------
    def outside_seen(self) -> bool:
        """Whether outside content has entered the session, noted or waiting to be."""
        return self._outside_seen() or any(n[1].startswith("outside:") for n in self._backlog)

    def tainted(self, args: Any) -> bool:
        """Whether a call given ``args`` now would give a result read as outside content (its
        arguments came from outside content; :meth:`_taint`)."""
        self.flush()
        return self._taint(args) is not None

    def _taint(self, args: Any) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """Where a call's arguments came from outside content: ``(labels, flags)`` of that
        content (label ``agent`` for a value nobody gave once outside content had entered;
        flags ``instructs``, ``to-agent``, and ``prose`` where any came from outside prose,
        from the agent or from evicted content rather than from fields), or ``None`` where
        every value came from the person or a trusted result. Tiny values
        (:func:`duraguard._tiny.tiny`) are left out: a lookup by one selects among the tool's
        own data, it cannot carry a value in."""
        if not self._outside_seen():
            return None
        labels: set[str] = set()
        flags: set[str] = set()
        tainted = False
        for path, leaf in leaves(args):
            if untraceable(leaf):
                continue
            found, spilled = self._sighted(path, leaf)
            if self._clean(found):
                continue
            if not found:  # nobody gave it whole: what was it made of?
                text = _plain(str(leaf))
                words = [w for w in _WORDS.findall(text[:2000]) if len(w) >= 3][:64]
                if words and all(self._clean(self._where((w,))[0]) for w in words):
                    continue  # the person's (or a trusted result's) words, rearranged
                for part in [*((w,) for w in words), *part_keys(text)]:
                    where, spill = self._where(part)
                    found |= where
                    spilled = spilled or spill
            outside = [self._names[s] for s in found if self._names[s].startswith("outside:")]
            tainted = True
            if not outside:
                labels.add("evicted" if spilled else "agent")
            labels.update(label for n in outside for label in n.split(":")[1].split("+"))
            flags.update(f for n in outside for f in ("instructs", "to-agent") if f":{f}" in n)
            if not outside or any(from_prose(n) for n in outside):
                flags.add("prose")
        return (tuple(sorted(labels)), tuple(sorted(flags))) if tainted else None

    def _reached_by(self, args: Any) -> list[int]:
        """The earlier outside content a read of outside content was pointed to by: the calls
        whose content (not addressing an AI agent, read directly) holds one of the read's
        specific values whole (a link, a file name, an address, an id), and the content those
        were reached by in turn; at most :data:`MAX_HOPS`, the most recent first."""
        out: set[int] = set()
        for path, leaf in leaves(args):
            if not isinstance(leaf, str) or len(leaf) < 4 or untraceable(leaf):
                continue
            if " " in leaf.strip():
                continue
            found, _ = self._sighted(path, leaf)
            for serial in found:
                parts = self._names[serial].split(":")
                if parts[0] != "outside" or len(parts) < 3 or not parts[2].isdigit():
                    continue
                if "to-agent" in parts or "via" in parts:
                    continue
                out.add(int(parts[2]))
                for flag in parts[3:]:
                    if flag.startswith("by-"):
                        out.update(int(x) for x in flag[3:].split("-") if x.isdigit())
        return sorted(out, reverse=True)[:MAX_HOPS]

    # -- reading -------------------------------------------------------------------------
    def _shown(
        self,
        serials: set[int],
        spilled: bool,
        bare: set[int] | frozenset[int] = frozenset(),
        *,
        unread: bool = False,
    ) -> tuple[str, ...]:
        names = sorted(
            (self._names[s] + (":bare" if s in bare else "") for s in serials), key=_rank
        )
        out = [n for n in names if _rank(n)[0] == 0][:3]
        out += [n for n in names if _rank(n)[0] == 1][:3]
        out += [n for n in names if _rank(n)[0] == 2][: MAX_SOURCES_SHOWN - len(out)]
        if (spilled or unread) and not any(n.startswith("outside:") for n in out):
            # Once outside content was read in part (or overflowed its room), what only the
            # Bloom filter holds may be that content's: judged as the unread rest is.
            out.append(UNREAD if self._state.unread else EVICTED)  # unread implies it
        return tuple(out)

    def _sighted(self, path: str, leaf: Any) -> tuple[set[int], bool]:
        """The sources that saw ``leaf`` (at ``path`` of a call's arguments) as a whole, and
        whether the Bloom filter of evicted outside content holds it. A tiny value (see
        :func:`duraguard._tiny.tiny`) is the person's only where they state it as a value
        or beside the argument's name, and a trusted result's only where it introduced it in a
        field of that name; outside content that holds it anywhere still counts."""
        found, spilled = self._where(value_keys(leaf))
        small = tiny(leaf)
        if small is not None:
            kind, form = small
            keep = ("outside",) if kind == "num" else ("outside", "prompt", "turn")
            found = {s for s in found if self._names[s].split(":", 1)[0] in keep}
            roles = role_words(last_name(path))
            return found | self._where(tiny_keys(kind, form, roles))[0], spilled
        text = str(leaf) if isinstance(leaf, str) else ""
        words = _WORDS.findall(_plain(text[:20000])) if text else []
        if len(words) == 1 and not found:
            found, spilled = self._where(words)
        elif len(words) > 1 and any(c.isspace() for c in text.strip()):
            # a run of words (a name, prose); one token such as an address is found whole
            prose = _prose(text)
            found |= self._phrase(words, prose)
            if not found and not prose:
                spilled = spilled or self._spilled_phrase(words)
        return found, spilled

    def _bare(self, path: str, leaf: Any, found: set[int], tool: str) -> set[int]:
        """The outside sources in ``found`` that hold a tiny number only bare: not beside a word
        of its role, nor of the name of the ``tool`` it is given to or a verb of its kind
        (``11`` in prose, not ``file 11``, nor ``remove 11`` for ``delete_file``, ``set
        transaction 8`` for ``update_scheduled_transaction``: :func:`tool_words`)."""
        small = tiny(leaf)
        if small is None or small[0] != "num":
            return set()
        outside = {s for s in found if self._names[s].startswith("outside:")}
        if not outside:
            return set()
        roles = role_words(last_name(path)) | tool_words(tool)
        return outside - self._where(tiny_keys(*small, roles))[0]

    def lookup(self, args: Any, tool: str = "") -> tuple[Provenance, ...]:
        """Where each of a call's own values was seen before (``tool``: the tool they are given
        to, whose name says what a tiny number is beside): one row per value that was seen
        (the value itself stays in the subject; a value found nowhere once outside content was
        read only in part is shown as :data:`~duraguard._provenance.UNREAD`), and for prose or
        a destination nobody gave as a whole, one row per destination or part (``value`` names
        it) that was seen."""
        self.flush()
        out: list[Provenance] = []
        for path, leaf in leaves(args):
            if isinstance(leaf, bool) or leaf is None:
                continue
            found, spilled = self._sighted(path, leaf)
            unread = self._unplaced(found, spilled)
            if found or spilled or unread:
                bare = self._bare(path, leaf, found, tool)
                names = self._shown(found, spilled, bare, unread=unread)
                out.append(Provenance(path=path, sources=names))
            text = str(leaf) if isinstance(leaf, str) else ""
            if not text:
                continue
            shown = 0
            for part in parts(text) if (_prose(text) or not found) else ():
                where, spill = self._where(_destination_keys(*part))
                if (where or spill) and shown < MAX_PARTS_SHOWN:
                    shown += 1
                    out.append(
                        Provenance(path=path, value=part[1], sources=self._shown(where, spill))
                    )
        return tuple(out)


def _rank(name: str) -> tuple[int, int, int]:
    """The person's words first, then outside content (prose that instructs, prose, fields, what
    it names near a word of deleting, the records its fields name), then trusted results; the most
    recent first within each."""
    if name == "prompt" or name.startswith("turn:"):
        order, grade = 0, 0
    elif name.startswith("outside:"):
        grade = 0 if ":instructs" in name else 2 if ":field" in name else 1
        linked = name.endswith((":near", ":near:bare", ":named", ":named:bare"))
        order, grade = 1, 3 if linked else grade
    else:
        order, grade = 2, 0
    num = re.search(r":(\d+)", name)
    return (order, grade, -int(num.group(1)) if num else 0)
