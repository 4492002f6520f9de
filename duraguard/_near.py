"""What outside content names near a word of deleting or cancelling, in any form or language.

Pure and deterministic (it runs inside workflow code, and on the worker for a large result).
The order reader (:mod:`duraguard._imperatives`) reads orders by their grammar: a verb it knows,
in a form it knows, where an order's verb stands. Content can ask for a deletion in forms it does
not read, and each round of review found more: a verb not in its lists ("Vernichte X",
"Distruggi X"), a plural or a subjunctive ("Eliminate X", "Te pido que elimines X"), a noun
heading a list ("Löschliste:", "Suppression :", "Para exclusão:"), a table whose column holds
the verb ("| File | Delete? |" over "| X | yes |"), a verb-final clause whose lead it missed.

This reads no grammar. Wherever a word of that family stands (:data:`STEMS`: stems in English,
German, Dutch, French, Spanish, Italian, Portuguese and twelve more languages, a wastebasket
sign; read folded: accents and case dropped, look-alike letters Latin, hidden characters gone, in
every reading the markers are looked for in), the text within :data:`REACH` letters and digits of
it is keyed as a source of its own (``outside:...:near``); where one result's texts are
:data:`SMALL` together (an email), a word of deleting in any of them makes all of them near. It
orders nothing, and no check refuses for it; but it names a listing's record by that record's
name (:func:`duraguard._links.names_a_record`), as "file 13" in prose names it: an agent
asked to "delete the old draft" that deletes the file an email speaks of deleting is asked
(:func:`duraguard.checks.policy.task._picked_by_content`). Since round fifteen all outside
content names a record so (:func:`duraguard._links.linked_as`); near, a field's link is its own.
It holds the words of
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
"""Letters and digits on either side of a word of :data:`STEMS` that are keyed as near it (a
heading's list, a table under its header row, a clause whose verb comes at its end); what is
neither (spaces, dashes, a line of dots) does not count, so padding does not take a name out of
reach."""
SMALL = 4096
"""Characters of all of one result's texts at most for the result to be read as one: where a
word of :data:`STEMS` stands in any of its texts (an email's subject), everything it names is
near (its body, its attachments' names)."""
MAX_WINDOWS = 64
"""Windows of one text keyed apart; past them, the whole text is near (the more cautious reading)."""
_SLACK = 32
"""Characters more on either side, for what folding dropped before a word (hidden characters)."""
_FAR = 16 * REACH
"""Characters on either side a window reaches at most, however much of them is padding."""
_BY_WORD_START = (
    # English
    "delet", "remov", "eras", "purg", "trash", "wipe", "wiping", "shred", "destroy", "destru",
    "dispos", "discard", "junk", "nuke", "nuking", "expung", "obliterat", "cleanup", "clean-up",
    "clean up", "clear out", "zero out", "no longer exist", "get rid", "scrap\\b", "scrapp",
    "bin\\b", "binn", "rm\\b", "unlink", "zap\\b", "zapp", "toss\\b", "tossed", "axe\\b", "kill\\b", "dump\\b", "dumped", "drop\\b",
    "ditch", "eradicat", "annihilat", "unpublish", "cancel", "annul", "revok", "revoc",
    # German
    "tilg", "radier", "wegwerf", "weggeworf", "wegschmei", "storn", "kundig", "gekundig",
    # Dutch
    "wis\\b", "wissen", "gewist", "weggooi", "weggegooi", "opzeg",
    # French
    "supprim", "suppression", "effac", "elimin", "detrui", "jetez\\b", "jeter\\b", "corbeille",
    # Spanish, Italian, Portuguese
    "borra(?!dor)", "borre", "suprim", "papelera", "anula", "anule", "distrugg", "distrutt",
    "rimuov", "rimoss", "cestino", "disdic", "disdett", "apag", "exclui", "exclua", "exclusao",
    "excluid", "lixeira",
    # Polish, Czech, Swedish, Danish, Norwegian, Finnish, Turkish, Hungarian, Romanian,
    # Indonesian, Vietnamese, Russian, Ukrainian, Greek
    "usun", "skasuj", "smaz", "odstran", "radera", "ta bort", "slet", "poista", "sil\\b", "silin",
    "torol", "sterge", "hapus", "xoa\\b", "удал", "видал", "διαγρα",
)  # fmt: skip
"""Stems that start a word (folded as the text is: "Éliminez" is ``eliminez``)."""
_ANYWHERE = (
    "losch", "entfern", "vernicht", "entsorg", "papierkorb", "verwijder", "vernietig",
    "prullenbak", "削除", "删除", "刪除", "삭제", "حذف", "हटा", "\U0001f5d1", "\U0001f6ae", "\u274c",
    "\u2716",
)  # fmt: skip
"""Stems that stand inside a word too: German and Dutch put a prefix before them or make one word
of them and a noun ("gelöscht", "Löschliste", "te verwijderen"); scripts written without spaces,
or whose words take a prefix (Japanese, Chinese, Korean, Arabic, Hindi); a wastebasket or a cross."""
STEMS = re.compile(r"(?<![^\W\d_])(?:" + "|".join(map(folded, _BY_WORD_START)) + ")")
"""A word of deleting or cancelling at a word's start, in a folded text
(:func:`duraguard._orders.folded`)."""
_INSIDE = re.compile("|".join(map(folded, _ANYWHERE)))
"""The same anywhere in a word; apart, so a text is scanned for their first letters at C speed."""
_HAAL = re.compile(r"(?<![^\W\d_])haal\b")
_WEG = re.compile(r"\bweg\b")
"""Dutch "haal X weg" (take X away): "haal" is near where "weg" is in the same text."""


Part = tuple[str, set[str], list[str], list[tuple[str, ...]]]
"""Outside content's prose or its fields: the name its notes go under, its keys, its texts and
each text's readings."""


def noted_parts(prose: Part, fields: Part, day: str) -> list[tuple[str, set[str]]]:
    """:func:`noted_orders` of the prose and of the fields of one result (each where it has
    keys), read near as one where they are small (:func:`near_in_all`)."""
    whole = near_in_all([x for _, _, ts, rs in (prose, fields) for x in zip(ts, rs, strict=True)])
    return [n for part in (prose, fields) if part[1] for n in noted_orders(*part, day, whole)]


def noted_orders(
    name: str,
    keys: set[str],
    texts: list[str],
    readings: list[tuple[str, ...]],
    day: str,
    whole: bool | None = None,
) -> list[tuple[str, set[str]]]:
    """Outside content's texts noted under ``name`` (:func:`duraguard._noting.outside_notes`):
    all their ``keys``, with the kinds the whole orders; the words of its orders per kinds
    (:func:`duraguard._imperatives.order_notes`); and what it names near a word of deleting
    that no order's words hold (``:near``): all of ``keys`` where ``whole`` is true, none where
    it is false (:func:`near_in_all`), else each text read apart (:func:`near_keys`).
    ``readings``: each text's."""
    ordered, orders = order_notes(texts, [r for rs in readings for r in rs], day)
    out = [(":".join([name, *ordered]), keys)]
    out += [(":".join([name, *k]), words) for k, words in orders.items()]
    if whole is None:
        near = near_keys(zip(texts, readings, strict=True))
    else:
        near = keys if whole else set()
    near = near.difference(*orders.values())
    if near:
        out.append((f"{name}:near", near))
    return out


def near_in_all(texts: list[tuple[str, tuple[str, ...]]]) -> bool | None:
    """Where one result's texts (each with its readings) are :data:`SMALL` together, whether a
    word of :data:`STEMS` stands in any of them (then all they name is near, else nothing is);
    ``None`` where they are larger (each is read apart)."""
    if sum(len(t) for t, _ in texts) > SMALL:
        return None
    return any(_hits(folded(r).lower()) for t, rs in texts for r in {t, *rs})


def near_keys(texts: Iterable[tuple[str, tuple[str, ...]]]) -> set[str]:
    """The provenance keys of what each text names within :data:`REACH` letters and digits of a
    word of :data:`STEMS`. ``texts``: each text with its other readings (decoded, letters joined,
    in plain words, as :func:`duraguard._noting.marker_readings` gives them). A word found in a
    reading about as long as the text (within a tenth) keys the text around the same place; one
    found only in a reading of another length (decoded from base64, letters joined) makes the
    whole text near."""
    keys: set[str] = set()
    for text, readings in texts:
        spans = _spans(text, readings)
        if spans is None:
            keys |= text_keys(text, whole=False, typed=False)
            continue
        for start, end in spans:
            keys |= text_keys(_snapped(text, start, end), whole=False, typed=False)
    return keys


def _hits(low: str) -> list[tuple[int, str]]:
    """Where a word of :data:`STEMS` starts in a folded text, and the word; Dutch "haal" only
    where "weg" is in it too (linear: no pattern looks from one to the other)."""
    hits = [(m.start(), m.group()) for p in (STEMS, _INSIDE) for m in p.finditer(low)]
    if "haal" in low and _WEG.search(low):
        hits += [(m.start(), "haal") for m in _HAAL.finditer(low)]
    return hits


def _spans(text: str, readings: tuple[str, ...]) -> list[tuple[int, int]] | None:
    """The windows of ``text`` near a word of :data:`STEMS`, merged, in order; ``None`` where the
    whole text is near."""
    size = len(text)
    found: list[int] = []
    seen: set[str] = set()
    words: set[str] = set()
    for reading in (text, *readings):
        low = folded(reading).lower()  # a Cherokee look-alike reads as a capital
        if low in seen:
            continue
        seen.add(low)
        hits = _hits(low)
        if abs(len(low) - size) * 10 > size:
            if {w for _, w in hits} - words:
                return None  # a word only this reading holds, and no place to map it to
            continue
        words.update(w for _, w in hits)
        scale = size / max(len(low), 1)
        found += [int(at * scale) for at, _ in hits]
    runs: list[list[int]] = []  # hits less than REACH characters apart: within reach of each other
    for place in sorted(set(found)):
        if runs and place - runs[-1][1] <= REACH:
            runs[-1][1] = place
        else:
            runs.append([place, place])
        if len(runs) > MAX_WINDOWS * 4:
            return None
    merged: list[tuple[int, int]] = []
    for first, last in runs:  # a window from each run's ends, as far as padding takes it
        start, end = _back(text, first), _ahead(text, last)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged if len(merged) <= MAX_WINDOWS else None


_REACHED = re.compile(rf"(?:[\W_]*+[^\W_]){{0,{REACH}}}")
"""As many characters as hold :data:`REACH` letters and digits, from where it is matched."""


def _ahead(text: str, at: int) -> int:
    """Where the window after ``at`` ends: :data:`REACH` letters and digits on (not past
    :data:`_FAR` characters), and :data:`_SLACK` more."""
    ahead = _REACHED.match(text, at, min(len(text), at + _FAR))
    return min(len(text), (ahead.end() if ahead else at) + _SLACK)


def _back(text: str, at: int) -> int:
    """Where the window before ``at`` starts, as :func:`_ahead` reads ahead."""
    back = _REACHED.match(text[max(0, at - _FAR) : at][::-1])
    return max(0, at - (back.end() if back else 0) - _SLACK)


_WORD_END = re.compile(r"\S{0,256}")
_WORD_START = re.compile(r"\S{0,256}$")


def _snapped(text: str, start: int, end: int) -> str:
    """``text[start:end]`` widened to whole words at both ends (to the next whitespace, at most
    256 characters further: a text of no spaces is not walked whole)."""
    head = _WORD_START.search(text, max(0, start - 256), start)
    tail = _WORD_END.match(text, end)
    return text[head.start() if head else start : tail.end() if tail else end]


__all__ = [
    "MAX_WINDOWS", "REACH", "SMALL", "STEMS", "Part", "near_in_all", "near_keys", "noted_orders",
    "noted_parts",
]  # fmt: skip
