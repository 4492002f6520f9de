"""What outside content names near a word of deleting or cancelling, in any form or language.

Pure and deterministic (it runs inside workflow code, and on the worker for a large result).
The order reader (:mod:`duraguard._imperatives`) reads orders by their grammar: a verb it knows,
in a form it knows, where an order's verb stands. Content can ask for a deletion in forms it does
not read, and each round of review found more: a verb not in its lists ("Vernichte X",
"Distruggi X"), a plural or a subjunctive ("Eliminate X", "Te pido que elimines X"), a noun
heading a list ("Löschliste:", "Suppression :", "Para exclusão:"), a table whose column holds
the verb ("| File | Delete? |" over "| X | yes |"), a verb-final clause whose lead it missed.

This reads no grammar. Wherever a word of that family stands (:data:`STEMS`: its stems in
English, German, Dutch, French, Spanish, Italian and Portuguese, read folded: accents and case
dropped, look-alike letters Latin, in every reading the markers are looked for in), the text
within :data:`REACH` characters of it is keyed as a source of its own (``outside:...:near``).
It orders nothing, and no check refuses for it; but it names a listing's record by that
record's name (:func:`duraguard._sourcestore._names_a_record`), as "file 13" in prose names it:
an agent asked to "delete the old draft" that deletes the file an email speaks of deleting is
asked (:func:`duraguard.checks.policy.task._picked_by_content`). It holds the words of
"contracts-2024.pdf was deleted by mistake" and "do not delete X" too: a call on that very
record is asked, which is the safe side, and a call on any other record is not touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._imperatives import order_notes
from ._orders import folded
from ._provenance import text_keys

REACH = 400
"""Characters on either side of a word of :data:`STEMS` that are keyed as near it: a heading's
list, a table under its header row, a clause whose verb comes at its end."""
MAX_WINDOWS = 64
"""Windows of one text keyed apart; past them, the whole text is near (the more cautious reading)."""
_SLACK = 32
"""Characters more on either side, for what folding dropped before a word (hidden characters)."""
_BY_WORD_START = (
    # English
    "delet", "remov", "eras", "purg", "trash", "wipe", "wiping", "shred", "destroy", "destru",
    "dispos", "discard", "junk", "nuke", "nuking", "expung", "obliterat", "cleanup", "clean-up",
    "clean up", "get rid", "scrap\\b", "scrapp", "bin\\b", "binn", "rm\\b", "unlink",
    "cancel", "annul", "revok", "revoc",
    # German
    "tilg", "wegwerf", "weggeworf", "wegschmei", "storn", "kundig", "gekundig",
    # Dutch
    "wis\\b", "wissen", "gewist", "weggooi", "weggegooi", "opzeg",
    # French
    "supprim", "suppression", "effac", "elimin", "detrui", "jetez\\b", "jeter\\b", "corbeille",
    # Spanish, Italian, Portuguese
    "borra(?!dor)", "borre", "suprim", "papelera", "anula", "anule", "distrugg", "distrutt",
    "rimuov", "rimoss", "cestino", "disdic", "disdett", "apag", "exclui", "exclua", "exclusao",
    "excluid", "lixeira",
)  # fmt: skip
"""Stems that start a word (folded: "Éliminez" is ``eliminez``, "Bórrenlo" ``borrenlo``)."""
_ANYWHERE = ("losch", "entfern", "vernicht", "entsorg", "papierkorb", "verwijder", "vernietig",
             "prullenbak")  # fmt: skip
"""Stems that stand inside a word too: German and Dutch put a prefix before them or make one word
of them and a noun ("gelöscht", "Löschliste", "Dateilöschung", "te verwijderen")."""
STEMS = re.compile(
    r"(?<![^\W\d_])(?:"
    + "|".join(_BY_WORD_START)
    + ")|"
    + "|".join(_ANYWHERE)
    + r"|(?<![^\W\d_])haal\b(?:[^\n.!?]|[.!?](?=\S)){1,120}?\bweg\b"
)
"""A word of deleting or cancelling, in a folded text (:func:`duraguard._orders.folded`); and
Dutch "haal X weg"."""


def noted_orders(
    name: str, keys: set[str], texts: list[str], readings: list[tuple[str, ...]], day: str
) -> list[tuple[str, set[str]]]:
    """Outside content's texts noted under ``name`` (:func:`duraguard._noting.outside_notes`):
    all their ``keys``, with the kinds the whole orders; the words of its orders per kinds
    (:func:`duraguard._imperatives.order_notes`); and what it names near a word of deleting
    that no order's words hold (``:near``, :func:`near_keys`). ``readings``: each text's."""
    whole, orders = order_notes(texts, [r for rs in readings for r in rs], day)
    out = [(":".join([name, *whole]), keys)]
    out += [(":".join([name, *k]), words) for k, words in orders.items()]
    near = near_keys(zip(texts, readings, strict=True)).difference(*orders.values())
    if near:
        out.append((f"{name}:near", near))
    return out


def near_keys(texts: Iterable[tuple[str, tuple[str, ...]]]) -> set[str]:
    """The provenance keys of what each text names within :data:`REACH` characters of a word of
    :data:`STEMS`. ``texts``: each text with its other readings (decoded, letters joined, in plain
    words, as :func:`duraguard._noting.marker_readings` gives them). A word found in a reading
    about as long as the text (within a tenth) keys the text around the same place; one found
    only in a reading of another length (decoded from base64, letters joined) makes the whole
    text near."""
    keys: set[str] = set()
    for text, readings in texts:
        spans = _spans(text, readings)
        if spans is None:
            keys |= text_keys(text, whole=False, typed=False)
            continue
        for start, end in spans:
            keys |= text_keys(_snapped(text, start, end), whole=False, typed=False)
    return keys


def _spans(text: str, readings: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The windows of ``text`` near a word of :data:`STEMS`, merged, in order; ``None`` where the
    whole text is near."""
    size = len(text)
    found: list[int] = []
    seen = {text}
    words: set[str] = set()
    for reading in (text, *readings):
        if reading in seen and reading is not text:
            continue
        seen.add(reading)
        low = folded(reading)
        hits = list(STEMS.finditer(low))
        if abs(len(low) - size) * 10 > size:
            if {m.group() for m in hits} - words:
                return None  # a word only this reading holds, and no place to map it to
            continue
        words.update(m.group() for m in hits)
        scale = size / max(len(low), 1)
        found += [int(m.start() * scale) for m in hits]
    if not found:
        return []
    merged: list[tuple[int, int]] = []
    for place in sorted(set(found)):
        start, end = max(0, place - REACH - _SLACK), min(size, place + REACH + _SLACK)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged if len(merged) <= MAX_WINDOWS else None


_WORD_END = re.compile(r"\S{0,256}")
_WORD_START = re.compile(r"\S{0,256}$")


def _snapped(text: str, start: int, end: int) -> str:
    """``text[start:end]`` widened to whole words at both ends (to the next whitespace, at most
    256 characters further: a text of no spaces is not walked whole)."""
    head = _WORD_START.search(text, max(0, start - 256), start)
    tail = _WORD_END.match(text, end)
    return text[head.start() if head else start : tail.end() if tail else end]


__all__ = ["MAX_WINDOWS", "REACH", "STEMS", "near_keys", "noted_orders"]
