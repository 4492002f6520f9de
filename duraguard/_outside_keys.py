"""A labelled tool's result noted as outside content, worked out on the worker.

Noting outside content (:func:`duraguard._noting.outside_notes`) reads every text of the part
of a result that is noted (:func:`duraguard._provenance.clipped`: up to 1,024 values and
128 KB): its keys, its destinations, the orders it gives and the dates it names. On a quiet
machine that is a quarter to three quarters of a second for a large page or feed; in workflow
code, under load, it passed the SDK's 2 s deadlock limit, and the task failed again on every
retry with the same work. So a result this large (:data:`NOTED_ON_THE_WORKER`) is read where
no such limit holds: in duraguard's own tool step (sent with its keys,
:attr:`duraguard._result_keys.ResultKeys.outside`), or for an adapter's tool by the local
activity that reads its rest (:mod:`duraguard._rest_reader`); the workflow adds the hashes it is
sent, and a replay reads them back from history.

What binds them (:func:`outside_basis`): the version of the reading (:data:`OUTSIDE_VERSION`,
with the rest's :data:`~duraguard._rest_flags.REST_VERSION` and the Unicode data text is folded
by), the day the result came, the call's arguments (a result never vouches for its own call's
values) and the result's digest, the one its ledger entry records. Where any differs, the
workflow reads the result itself, as before. The notes' names are sent without the note's base
(``outside:<labels>:<call>``, and the earlier outside content it was reached by), which only
the workflow knows; a result given values from outside content (read as outside content though
its tool has no label) is only known to be one there, and is read there.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict

from ._derived import MAX_PER_SOURCE, numbers_in
from ._noting import echoes, outside_notes
from ._provenance import clipped
from ._rest_flags import REST_VERSION, RestFlags, made
from ._sourceindex import _h, _pack, unpack_sorted
from ._types import canonical_json

OUTSIDE_VERSION = 18
"""The version of the reading of outside content (:func:`outside_notes`, every pattern it reads
with, the hash of a key). Raise it with any change to what that reading notes:
``tests/test_outside_keys.py`` pins the notes of a corpus of pages, so a change fails there
until this is raised. Notes made by another version are read again in the workflow. 2: the
order reader reads "whoever reads this must", "would it be possible to", an adverb after a
modal, ", so" and an opening phrase with digits, a hyphen or a slash ("On 2024-05-01,"). 3: an
order's words are also keyed by the numbers glued to a word or spelt out in them ("file13",
"13th", "thirteen"), and reach back over the sentence before where its object points back
("Stale items: 13. Delete them."). 4: they reach back over two sentences or lines, whatever
the line ("Stale file:\ncontracts-2024.pdf\nDelete it.", "delete each listed above", "delete
what I listed", "delete that"), and over the lines after where its object comes after
("Delete the following:\n13"). 5: an object that points back with no pronoun ("delete the
file", "remove said file", "get rid of it"), a list right above counted as one sentence, and
lines that say nothing not counted either way. 6: "clean up", "bin", "scrap", "shred", "ditch"
and "nuke" order a deletion. 7: an order's words are keyed as a model reads them where they are
drawn or written otherwise too (look-alike letters, marks, escapes). 8: a heading "Files to
delete:" orders what it heads, and an arrow ("->") or "the next one" after the verb points
ahead. 9: digits drawn by letters in an order's words are read as digits too ("2O24", a
Cyrillic "З" for 3). 10: orders to act in German, French, Spanish, Italian, Portuguese and Dutch
(:mod:`duraguard._verbs_abroad`); more headings ("## Files to delete", "Zu löschen:") and
arrows, at a line's end only; digits of other scripts, and digits drawn for letters
("c0ntracts"); a verb drawn with look-alike letters ("d\u0435lete"). 11: "quite" and "remover",
English words first, order nothing ("Quite a few were kept"). 12: a German or Dutch verb that
ends its clause after "bitte", "gelieve", "könnten Sie", "muss" orders ("Bitte die Datei X
löschen.", "X muss gelöscht werden"); a verb with its pronoun on it ("Supprime-le :", "Bórralo:")
orders what its colon names. 13: headings with no verb ("Files for deletion:", "Deletion list:",
"To be deleted:", a table's cell "| for deletion |"), or with a word after it ("Things to delete
today:"); an arrow that starts the next line, "the line after this". 14: more digits drawn by letters ("zoz4",
"|3", an ezh for 3), and a run with no digit but one drawn by a Cyrillic letter ("ІЗ"). 15: a verb
that ends its clause orders only after a lead in that clause ("Ich muss X prüfen, bevor wir etwas
löschen" orders nothing); Dutch "wis" is not read ("WIS review"). 16: more leads abroad ("TODO: X
löschen", "Sie können", "ist zu", "Vergiss nicht,", "Vous devez", "Debes", "Bisogna", "É
preciso"), "kann gelöscht werden", "moet worden verwijderd", a colon or a dash after the verb;
"Marked for deletion: X", "For removal -> X", "Cleanup list:", "Things to delete by Friday:",
"Deletion list (2):", "| to delete |". 17: what content names within 400 characters of a word
of deleting or cancelling, in any form or language it knows, is a source of its own (``near``,
:mod:`duraguard._near`): it names a listing's record by its name, and orders nothing. 18: that
reach counts letters and digits (padding does not take a name out of it); a result of at most 4
KB that speaks of deleting anywhere is near whole; words of deleting in twelve more languages."""

NOTED_ON_THE_WORKER = 16 * 1024
"""A labelled result this large (characters of its canonical JSON) is noted on the worker. A
smaller one costs the workflow a few milliseconds, less than the history its hashes would take
(about 11 bytes a key)."""


class OutsideKeys(BaseModel):
    """A result's notes as outside content, worked out on the worker, and what they bind to."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    of: str
    """:func:`outside_basis` of what they were read from."""
    notes: tuple[tuple[str, str], ...]
    """Each note's name after its base (empty, or ``:``-led flags and kinds) and its keys'
    hashes, sorted, each once (packed as :class:`~duraguard._sourceindex.SourceIndex` packs
    them), in the order :func:`outside_notes` gives them."""
    prose: str = ""
    """The numbers in the noted part's prose, each as ``repr`` writes a float, comma-separated."""
    fields: str = ""
    """The numbers in its fields, as :attr:`prose`."""


class RestRead(RestFlags):
    """What the local activity that reads an adapter's result (:mod:`duraguard._rest_reader`)
    returns: the flags of its unread rest and, where asked, its notes as outside content."""

    outside: OutsideKeys | None = None


Taken = tuple[list[tuple[str, list[int]]], list[float], list[float]]
"""What the workflow notes: each note's name after its base and its hashes; the numbers in
prose and in fields."""


def outside_basis(args: Any, day: str, result_digest: str) -> str:
    """What a result's outside notes depend on, as one digest."""
    version = [OUTSIDE_VERSION, REST_VERSION, unicodedata.unidata_version]
    text = canonical_json([version, day, args, result_digest])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def outside_keys(
    value: Any, args: Any, day: str, rest: tuple[str, ...], written: bytes | None = None
) -> OutsideKeys:
    """``value`` noted as outside content, as :meth:`duraguard._sources.Sources._note` notes a
    labelled tool's result called with ``args`` on ``day`` (ISO): the part of it noted, with
    ``rest``, the flags of its unread rest (empty where it is noted whole). ``written``: its
    canonical JSON (UTF-8) where the caller has it."""
    kept, _ = clipped(value)
    notes = outside_notes(kept, "", echoes(args), inherited=rest, day=day)
    prose, fields = numbers_in(kept)
    return OutsideKeys(
        of=outside_basis(args, day, made(value, written)),
        notes=tuple((name, _pack(sorted(set(map(_h, keys))))) for name, keys in notes),
        prose=",".join(map(repr, prose)),
        fields=",".join(map(repr, fields)),
    )


def outside_if_long(
    value: Any, args: Any, day: str, rest: RestFlags | None, size: int, written: bytes | None
) -> OutsideKeys | None:
    """:func:`outside_keys` of a result of ``size`` characters (its canonical JSON), with the
    flags of its unread rest (``rest``, ``None`` where it is noted whole), where it is at least
    :data:`NOTED_ON_THE_WORKER`; else ``None`` (the workflow notes it itself)."""
    if size < NOTED_ON_THE_WORKER:
        return None
    return outside_keys(value, args, day, rest.flags if rest is not None else (), written)


def outside_taken(keys: OutsideKeys | None, entry: Any, day: str) -> Taken | None:
    """The notes of ``keys`` where they were worked out on what ``entry`` (a ledger entry)
    records of its call, on ``day``, by this version's reading, and are what a worker sends;
    else ``None`` (the workflow reads the result itself)."""
    if keys is None or entry is None:
        return None
    try:
        expected = outside_basis(entry.args, day, str(entry.result_digest))
    except (TypeError, ValueError):
        return None
    if keys.of != expected:
        return None
    notes: list[tuple[str, list[int]]] = []
    for name, packed in keys.notes:
        hashes = unpack_sorted(packed)
        if hashes is None or (name and not name.startswith(":")):
            return None
        notes.append((name, hashes))
    prose, fields = _numbers(keys.prose), _numbers(keys.fields)
    if prose is None or fields is None:
        return None
    return notes, prose, fields


def with_inherited(after: str, inherited: tuple[str, ...]) -> str:
    """A sent note's name after its base (``after``) as :func:`outside_notes` names it given
    ``inherited`` flags too: the worker reads a result given values from outside content
    without the flags of that content, which only the workflow knows. Its keys are the same;
    its flags (after ``field``, where it names one) take in the inherited ones."""
    parts = after.split(":")[1:] if after else []
    lead = parts[:1] if parts[:1] == ["field"] else []
    rest = parts[len(lead) :]
    had = [f for f in ("instructs", "to-agent") if f in rest[:2]]
    rest = rest[len(had) :]
    to_agent = "to-agent" in had or "to-agent" in inherited
    instructs = to_agent or "instructs" in had or "instructs" in inherited
    flags = (["instructs"] if instructs else []) + (["to-agent"] if to_agent else [])
    return "".join(f":{p}" for p in [*lead, *flags, *rest])


def _numbers(text: str) -> list[float] | None:
    if not text:
        return []
    parts = text.split(",", MAX_PER_SOURCE)
    if len(parts) > MAX_PER_SOURCE:
        return None
    try:
        return [float(x) for x in parts]
    except ValueError:
        return None


__all__ = [
    "NOTED_ON_THE_WORKER",
    "OUTSIDE_VERSION",
    "OutsideKeys",
    "RestRead",
    "outside_basis",
    "outside_if_long",
    "outside_keys",
    "outside_taken",
    "with_inherited",
]
