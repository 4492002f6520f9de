"""A card number split across the leaves of one list or object: ``["4111", "1111", "1111",
"1111"]``, ``{"c1": 4111, "c2": 1111, ...}``. Each leaf alone is four digits, which no rule
reads; together, in order, they are the number, and whoever reads the call (or the tool, or the
page it is sent to) joins them as easily as a person does.

:class:`SplitCards` is fed the pieces :func:`._text.pieces` yields, in order, and finds each run
of neighbouring sibling leaves, every one a short group of digits (at most
:data:`MAX_GROUP_DIGITS`), whose digits joined are a card number (the length, a real card's
prefix and the Luhn digit, as for a card written whole). A run must hold two leaves at least and
be the card exactly: a list of numbers is read only where its neighbours make one. Linear: a run
is read in windows of at most 19 digits.
"""

from __future__ import annotations

import re
from typing import Any

from ._pii_find import CARD_SEPARATORS, card_ok
from ._text import Piece, normalise

MAX_GROUP_DIGITS = 6
"""The most digits one leaf of a split card holds (cards are written in groups of four to six)."""
_SEPARATORS = re.compile(CARD_SEPARATORS)
_GROUP = re.compile(rf"[0-9]{{1,{MAX_GROUP_DIGITS}}}")
_MAX_CARD = 19

Path = tuple[Any, ...]


def _group(piece: Piece) -> str | None:
    """The digits of a leaf that is one short group of them, else ``None``."""
    if piece.key or len(piece.text) > 4 * MAX_GROUP_DIGITS:
        return None
    text = _SEPARATORS.sub("", normalise(piece.text).text)
    return text if _GROUP.fullmatch(text) else None


class SplitCards:
    """Reads the pieces of one value in order; :meth:`runs` gives the split card numbers found,
    each as the leaves that hold it (their pieces)."""

    def __init__(self) -> None:
        self._found: list[list[Piece]] = []
        self._run: list[tuple[Piece, str]] = []
        self._parent: Path | None = None

    def feed(self, piece: Piece) -> None:
        if piece.key:
            return
        parent = piece.path[:-1]
        digits = _group(piece)
        if digits is None or parent != self._parent:
            self._close()
        self._parent = parent
        if digits is not None:
            self._run.append((piece, digits))

    def runs(self) -> list[list[Piece]]:
        self._close()
        return self._found

    def _close(self) -> None:
        run, self._run = self._run, []
        i = 0
        while i < len(run) - 1:
            joined = run[i][1]
            for j in range(i + 1, len(run)):
                joined += run[j][1]
                if len(joined) > _MAX_CARD:
                    break
                if card_ok(joined):
                    self._found.append([p for p, _ in run[i : j + 1]])
                    i = j
                    break
            i += 1
