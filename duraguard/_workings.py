"""Workings of a call's values from the numbers and dates the provenance index holds.

The part of :class:`duraguard._sources.Sources` that keeps, per source noted in this run, the
numbers it holds, and finds for a call's number or date that was seen nowhere a working of it
(:mod:`duraguard._derived`: a sum, a difference, a share, a date some days on) from those of the
person's latest turn and of the results since. Pure and deterministic (workflow code).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from ._derived import MAX_NUMBERS, MAX_PER_SOURCE, Basis, as_float, is_id, shifted, sums
from ._provenance import leaves
from ._types import Provenance

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}(?:$|[T ])")


class Workings:
    """A mixin of :class:`duraguard._sources.Sources`: numbers per source, and workings."""

    _serial: dict[str, int]
    _names: dict[int, str]
    _numbers: dict[int, list[float]]

    def flush(self) -> None:
        raise NotImplementedError

    def _sighted(self, path: str, leaf: Any) -> tuple[set[int], bool]:
        raise NotImplementedError

    def _where(self, keys: Iterable[str]) -> tuple[set[int], bool]:
        raise NotImplementedError

    def _keep_numbers(self, name: str, found: list[float]) -> None:
        """Remember numbers a kept source holds, for values worked out from them."""
        serial = self._serial.get(name)
        if serial is not None and found:
            ours = self._numbers.setdefault(serial, [])
            ours.extend(x for x in dict.fromkeys(found) if x not in ours)
            del ours[MAX_PER_SOURCE:]

    def worked_out(self, args: Any, basis: Basis) -> tuple[Provenance, ...]:
        """Workings (:mod:`duraguard._derived`) of the call's numbers and dates that were seen
        nowhere, from the numbers and dates of ``basis``'s sources: a row per working, at path
        ``=`` + the value's pointer, ``value`` the expression, ``sources`` its operands'."""
        self.flush()
        pool: list[tuple[float, str]] | None = None
        out: list[Provenance] = []
        for path, leaf in leaves(args):
            t = type(leaf)
            number = (t is int or t is float) and not is_id(path)
            if not number and not (t is str and _ISO_DAY.match(leaf)):
                continue
            found, spilled = self._sighted(path, leaf)
            if found or spilled:
                continue
            if number:
                if pool is None:
                    pool = list(itertools.islice(self._pool(basis), MAX_NUMBERS))
                f = as_float(leaf)
                workings: list[tuple[str, tuple[str, ...]]] = (
                    [] if f is None else list(sums(f, pool))
                )
            else:
                workings = shifted(str(leaf), basis.offsets, lambda d: self._dated(d, basis))
            out.extend(Provenance(path="=" + path, value=e, sources=w) for e, w in workings)
        return tuple(out)

    def _pool(self, basis: Basis) -> Iterator[tuple[float, str]]:
        """The numbers of ``basis``'s sources with their source, the most recent first."""
        for serial in reversed(self._numbers):
            name = self._names[serial]
            if basis.admits(name):
                for x in self._numbers[serial]:
                    yield x, name

    def _dated(self, day: str, basis: Basis) -> tuple[str, ...]:
        """The sources of ``basis`` that saw the date ``day`` (ISO), or said it relative to the
        session's day."""
        if day in basis.days and basis.turn:
            return (basis.turn,)
        found, _ = self._where((day, "--" + day[5:10]))  # "May 20" is said without a year
        return tuple(sorted(n for n in (self._names[s] for s in found) if basis.admits(n)))[:4]


def day_of(at: Any) -> str:
    """The ISO day of a ledger entry's workflow time (seconds since the epoch), or ``""``."""
    if not isinstance(at, int | float) or isinstance(at, bool) or not at > 0:
        return ""
    return (_EPOCH + timedelta(seconds=float(at))).date().isoformat()
