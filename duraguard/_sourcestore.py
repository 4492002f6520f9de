"""The provenance index's store: each source kept by name with the hashes of its keys,
bounded: past its budget it evicts (trusted results first, outside content last) into a Bloom
filter that never forgets a taint. :class:`~duraguard._sources.Sources` notes values into it
and answers where each was seen."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ._bloom import Bloom
from ._derived import numbers_in
from ._links import latest_within, linked_as, names_a_record
from ._provenance import BLOOM_BYTES, MAX_INDEX_BYTES, MAX_TOKENS_PER_SOURCE
from ._rows import ACTED, MAX_ROWS, HashedRow, linked, pack_rows, rows_in, unpack_rows
from ._sourceindex import SourceIndex, _h, _pack, _unpack
from ._workings import Workings

MAX_ADDRESSED = 8
"""Calls whose content addressed an AI agent, and that pressed an order, kept (the latest)."""
MAX_LISTINGS = 8
"""Trusted listings noted before outside content entered whose records are read when it does
(the latest); an older one's records are then linked to nothing said later."""
MAX_KEPT_ROWS = 1024
"""Records of trusted listings kept for sources noted after them (the latest)."""
MAX_CARRIED_ROW_BYTES = 192 * 1024
"""The most the records kept and the listings waiting take in the carried form (continue-as-new),
packed: past it the oldest are left behind (a record of a hundred-odd bytes, so about 1,500)."""


class SourceStore(Workings):
    """Kept sources and the index of their keys, within ``budget`` bytes serialised.

    Args:
        state: The carried form, kept up to date as sources are added.
        budget: The most :attr:`state` may take serialised, in bytes.
    """

    def __init__(
        self,
        state: SourceIndex,
        *,
        budget: int = MAX_INDEX_BYTES,
    ) -> None:
        if budget < 4 * BLOOM_BYTES:
            raise ValueError(f"budget must be at least {4 * BLOOM_BYTES} bytes; got {budget}")
        self._state = state
        self.budget = budget
        self._index: dict[int, list[int]] = {}
        self._names: dict[int, str] = {}
        self._hashes: dict[int, list[int]] = {}
        self._serial: dict[str, int] = {}
        self._next = 0
        self._bytes = 0
        self._by_kind: dict[str, dict[int, None]] = {}
        """Kept sources by kind (``result``, ``turn``, ``outside``, ``prompt``), oldest first."""
        """What the kept sources take serialised (kept up to date as they come and go)."""
        self._numbers: dict[int, list[float]] = {}
        """Per kept source noted in this run, the numbers it holds (:data:`MAX_PER_SOURCE` at
        most), for values worked out from them (:mod:`duraguard._derived`). Not carried: after
        continue-as-new a worked-out value is asked about again (only stricter)."""
        self._rows: dict[HashedRow, None] = {}
        """Records of the trusted listings noted so far (:meth:`_listed`), the latest
        :data:`MAX_KEPT_ROWS`, linked to each source noted after them that names a record."""
        self._acts = False
        """The person's words act on something (:func:`duraguard._rows.acted_keys`: "delete
        contracts-2024.pdf"): listings are read for their records even before outside content,
        so the id of the record they named is theirs (``confirm_read`` reads it so)."""
        self._listings: list[Callable[[], list[HashedRow]]] = []
        """Trusted listings noted before outside content entered, each as what reads its records,
        read only once a source that names a record is noted after it. Carried across
        continue-as-new with :attr:`_rows` and :attr:`_acts` (:meth:`carry_records`)."""
        self._bloom = Bloom(state.spilled)
        for name, packed in state.sources:
            self._load(name, _unpack(packed))
        self._take_records(state)

    @property
    def state(self) -> SourceIndex:
        """The carried form, every value noted so far in it."""
        self.flush()
        return self._state

    # -- continue-as-new ----------------------------------------------------------------
    def carry_records(self) -> None:
        """Write what this store keeps in memory into the carried form, for the next run of a
        continue-as-new: the records kept, the listings waiting (read now) and whether the person
        acted, within :data:`MAX_CARRIED_ROW_BYTES` (the latest kept first, then the listings
        waiting). The next run reads them back (:meth:`_take_records`): a listing before the
        continue-as-new is linked to what names one of its records after it."""
        self.flush()
        room = MAX_CARRIED_ROW_BYTES
        kept, room = latest_within(list(self._rows), room)
        listings: list[str] = []
        for read in reversed(self._listings):
            rows, room = latest_within(read(), room)
            if rows:
                listings.insert(0, pack_rows(rows))
        self._state.records = [
            pack_rows(kept[i : i + MAX_ROWS]) for i in range(0, len(kept), MAX_ROWS)
        ]
        self._state.listings = listings
        self._state.acted = self._acts

    def _take_records(self, state: SourceIndex) -> None:
        """What :meth:`carry_records` wrote, back in memory (a text of another version of
        :mod:`duraguard._rows`, or not its form, is left behind: only fewer links)."""
        for text in state.records:
            for row in unpack_rows(text) or ():
                self._rows[row] = None
        for text in state.listings:
            rows = unpack_rows(text)
            if rows:
                self._listings.append(partial(list, rows))
        self._acts = state.acted
        state.records, state.listings = [], []  # kept in memory from here, written at the next

    # -- size ----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The serialised size of :attr:`state` in bytes (close estimate, JSON)."""
        self.flush()
        total = 64 + len(self._state.spilled)
        for name, packed in self._state.sources:
            total += len(name) + len(packed) + 8
        return total

    def _estimate(self) -> int:
        """:attr:`size` from the kept counts, without encoding anything."""
        return 64 + self._bloom.encoded_size() + self._bytes

    def _entry_size(self, name: str, n: int) -> int:
        return len(name) + (n * 8 + 2) // 3 * 4 + 8

    def _load(self, name: str, hashes: list[int]) -> None:
        serial = self._next
        self._next += 1
        self._serial[name] = serial
        self._by_kind.setdefault(name.split(":", 1)[0], {})[serial] = None
        self._names[serial] = name
        self._hashes[serial] = hashes
        self._bytes += self._entry_size(name, len(hashes))
        self._indexed(serial, hashes)

    def _indexed(self, serial: int, hashes: Iterable[int]) -> None:
        # The hot loop of noting a result (hundreds of keys each): no list made per key that is
        # already indexed, the dict looked up once per key.
        index = self._index
        for h in hashes:
            where = index.get(h)
            if where is None:
                index[h] = [serial]
            else:
                where.append(serial)

    def _add(self, name: str, keys: set[str]) -> None:
        if not self._acts and (name == "prompt" or name.startswith("turn:")):
            self._acts = any(k.startswith(ACTED) for k in keys)
        if keys:
            self._add_hashes(name, set(map(_h, keys)))

    def _add_hashes(self, name: str, hashes: Iterable[int], *, ordered: bool = False) -> None:
        """:meth:`_add` of keys already hashed (:mod:`duraguard._result_keys`). ``ordered``:
        ``hashes`` is a list sorted with each once (a step's, as ``ResultKeys.unpacked`` checks
        them), not sorted again for a new source."""
        outside = name.startswith("outside:")
        serial = self._serial.get(name)
        have = set(self._hashes[serial]) if serial is not None else set()
        new = list(hashes) if ordered and not have else sorted(set(hashes) - have)
        room = MAX_TOKENS_PER_SOURCE - len(have)
        if len(new) > room:
            if outside:
                self._spill(new[max(room, 0) :])
                self._state.unread = True  # its keys past the room are only in the Bloom filter
            new = new[: max(room, 0)]
        if not new:
            return
        if serial is None:
            self._load(name, new)
            self._state.sources.append((name, _pack(new)))
            if (self._rows or self._listings) and names_a_record(name):
                self._fit()
                return self._link_new(name)
        else:
            self._bytes -= self._entry_size(name, len(self._hashes[serial]))
            self._hashes[serial].extend(new)
            self._bytes += self._entry_size(name, len(self._hashes[serial]))
            self._indexed(serial, new)
            pos = next(i for i, (n, _) in enumerate(self._state.sources) if n == name)
            self._state.sources[pos] = (name, _pack(self._hashes[serial]))
        self._fit()

    # -- eviction ------------------------------------------------------------------------
    def _victim(self) -> int | None:
        """Trusted results first, then older turns, then outside content; oldest first in each.
        The prompt and the latest turn stay."""
        for kind in ("result", "turn", "outside"):
            kept = self._by_kind.get(kind)
            if not kept:
                continue
            if kind == "turn":
                if len(kept) > 1:
                    return next(iter(kept))
                continue
            return next(iter(kept))
        return None

    def _fit(self) -> None:
        if self._estimate() <= self.budget:
            return
        spilled = False
        while self._estimate() > self.budget:
            serial = self._victim()
            if serial is None:
                break
            name = self._names.pop(serial)
            self._numbers.pop(serial, None)
            del self._by_kind[name.split(":", 1)[0]][serial]
            hashes = self._hashes.pop(serial)
            self._bytes -= self._entry_size(name, len(hashes))
            del self._serial[name]
            for h in hashes:
                where = self._index.get(h)
                if where is not None:
                    where.remove(serial)
                    if not where:
                        del self._index[h]
            self._state.sources = [(n, p) for n, p in self._state.sources if n != name]
            if name.startswith("outside:"):
                self._spill(hashes, encode=False)
                spilled = True
        if spilled:
            self._encode()

    def _spill(self, hashes: list[int], *, encode: bool = True) -> None:
        self._bloom.add(hashes)
        self._state.spilled_tokens += len(hashes)
        if encode:
            self._encode()

    def _encode(self) -> None:
        if not self._bloom.empty:
            self._state.spilled = self._bloom.encoded()

    def _spilled(self, h: int) -> bool:
        return h in self._bloom

    # -- reading -------------------------------------------------------------------------
    def _where(self, keys: Iterable[str]) -> tuple[set[int], bool]:
        found: set[int] = set()
        spilled = False
        for k in keys:
            h = _h(k)
            found.update(self._index.get(h, ()))
            spilled = spilled or self._spilled(h)
        return found, spilled

    def _unplaced(self, found: set[int], spilled: bool) -> bool:
        """Whether a value found nowhere may come from the unread rest of outside content
        (``SourceIndex.unread``): shown as :data:`~duraguard._provenance.UNREAD`, which the
        policy judges apart from the Bloom filter's maybes."""
        return not found and not spilled and self._state.unread

    def _phrase(self, words: list[str], prose: bool) -> set[int]:
        """Sources holding this run of words: all of its word pairs, or most of them in prose."""
        pairs = [f"{a} {b}" for a, b in itertools.pairwise(words)][:400]
        if not pairs:
            return set()
        counts: dict[int, int] = {}
        for p in set(pairs):
            for s in self._index.get(_h(p), ()):
                counts[s] = counts.get(s, 0) + 1
        need = len(set(pairs)) * (0.6 if prose else 1.0)
        return {s for s, n in counts.items() if n >= need}

    def _spilled_phrase(self, words: list[str]) -> bool:
        return all(self._spilled(_h(f"{a} {b}")) for a, b in itertools.pairwise(words))

    def _listed(self, listing: tuple[Any, Any, Any] | None) -> None:
        """A trusted result noted (``(value, its ledger entry, the keys its step sent)``):
        where outside content has entered, its records are linked to what named one of them
        already and kept for what does later (:meth:`_link_rows`); before, it waits, unread,
        until a source that names a record is noted (:meth:`_link_new`)."""
        if listing is None:
            return
        if not self._outside_seen() and not self._acts:
            self._listings.append(partial(rows_in, listing[0], listing[1], None))
            del self._listings[:-MAX_LISTINGS]
            return
        self._link_rows(rows_in(*listing))

    def _link_rows(self, rows: list[HashedRow]) -> None:
        """Key the sources that name a record of a trusted result by another of its fields
        (:func:`duraguard._links.names_a_record`: outside content, a field apart from its own
        values; the person's words where they name what an action is done to,
        :func:`duraguard._rows.acted_keys`, by a short word too) by that record's ids
        (:func:`duraguard._rows.linked`): "delete contracts-2024.pdf"
        then holds ``file=13`` as "delete file 13" would. The records are kept, each once, for
        sources noted later (:meth:`_link_new`)."""
        if not rows:
            return
        for row in rows:
            self._rows.pop(row, None)
            self._rows[row] = None
        while len(self._rows) > MAX_KEPT_ROWS:
            del self._rows[next(iter(self._rows))]
        self._link(rows, None)

    def _link(self, rows: list[HashedRow], only: int | None) -> None:
        kinds = self._by_kind
        person = {*kinds.get("prompt", ()), *kinds.get("turn", ())}
        outside = {s for s in kinds.get("outside", ()) if names_a_record(self._names[s])}
        if only is not None:
            person, outside = person & {only}, outside & {only}
            if not person and not outside:
                return
            own = set(self._hashes[only])  # a record none of whose forms starts in it: skipped
            rows = [r for r in rows if any(f[0] in own for p in r[1:] for f in p if f)]
        to = linked(rows, outside, person, self._index)
        for name, keys in sorted((self._names[s], sorted(k)) for s, k in to.items()):
            self._add_hashes(linked_as(name), [h for hashes in keys for h in hashes])  # packed once

    def _link_new(self, name: str) -> None:
        """A source that may name a record (:func:`names_a_record`), just noted: keyed by the
        ids of the kept records it names, as :meth:`_link_rows` keys those noted before the
        listing. Where it is the first once outside content entered, the listings that waited
        are read first (and linked to every source, this one included)."""
        if not self._outside_seen() and not (self._acts and not name.startswith("outside:")):
            return  # before outside content, only the words of a person who acts are linked
        kept = list(self._rows)
        waiting, self._listings = self._listings, []
        for read in waiting:
            self._link_rows(read())
        serial = self._serial.get(name)
        if serial is not None and kept:
            self._link(kept, serial)

    def _outside_seen(self) -> bool:
        return bool(self._by_kind.get("outside")) or not self._bloom.empty or self._state.unread

    def _clean(self, serials: set[int]) -> bool:
        """Whether any of these sources is the person's words or a trusted result."""
        return any(not self._names[s].startswith("outside:") for s in serials)

    # -- notes -----------------------------------------------------------------------------
    def _add_all(self, notes: list[tuple[str, set[str]]], value: Any = None) -> None:
        for name, keys in notes:
            self._add(name, keys)
            self._addressing(name)
        if value is not None and notes:
            in_prose, in_fields = numbers_in(value)
            for name, _ in notes:
                field = "field" in name.split(":")[3:]
                self._keep_numbers(name, in_fields if field else in_prose)

    def _add_sent(
        self, base: str, notes: list[tuple[str, list[int]]], prose: list[float], fields: list[float]
    ) -> None:
        """:meth:`_add_all` of notes worked out on the worker, named after ``base``."""
        for after, hashes in notes:
            name = base + after
            self._add_hashes(name, hashes, ordered=True)
            self._addressing(name)
            self._keep_numbers(name, fields if "field" in name.split(":")[3:] else prose)

    def _addressing(self, name: str) -> None:
        parts = name.split(":")
        call = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else -1
        for flag, seen in (("to-agent", self._state.addressed), ("instructs", self._state.pressed)):
            if flag in parts[2:] and call not in seen:
                seen.append(call)
                del seen[:-MAX_ADDRESSED]


__all__ = ["MAX_ADDRESSED", "SourceStore"]
