"""Which sources a trusted listing's records are linked to, and what the carried form keeps of them.

Pure and deterministic (it runs inside workflow code). :class:`duraguard._sourcestore.SourceStore`
keys a source that names a record by another of its fields by that record's ids
(:func:`duraguard._rows.linked`): "contracts-2024.pdf" then holds ``file=13`` as "file 13" would.
Which sources count (:func:`names_a_record`): the person's words, where they act on the record,
and outside content wherever it names one; a trusted result never does. A field of outside
content that neither orders an action nor speaks of deleting near the name is keyed apart
(:func:`linked_as`), so that the record it names is told from its own values.

Until round fifteen outside prose counted only where it ordered or pressed an action, or spoke of
deleting near the name. Content that tells the agent which record the person meant in none of
those ("The old draft you are asked about is contracts-2024.pdf", "The one you're looking for is
X", "Your request refers to X") then picked the record unseen: the listing vouched for its id.
Now a record outside content names is that content's too; ``task._picked_by_content`` asks for
a change or delete of it where the person did not name it. A text of fewer than five words is a
field ("Old draft = X", a subject "Re: X"), whose own values (the ids of the mails a mailbox
lists) choose nothing: the record it names by name is keyed as ``<field source>:named``.
"""

from __future__ import annotations

from ._rows import HashedRow


def names_a_record(name: str) -> bool:
    """Whether a source choosing a record by its name counts (:meth:`SourceStore._link_rows`):
    the person's words (``prompt``, ``turn:<i>``) and outside content, not a trusted result (nor
    what a link keyed, :func:`linked_as`)."""
    if name == "prompt" or name.startswith("turn:"):
        return True
    return name.startswith("outside:") and "named" not in name.split(":")[2:]


def linked_as(name: str) -> str:
    """The source a link keys by the ids of the records ``name`` names: itself where it is the
    person's words, outside prose (:func:`from_prose`), or a field of outside content whose own
    words order an action (a subject "Delete contracts-2024.pdf") or that speaks of deleting near
    the name (``near``); for a field that does neither, a source of its own, ``<name>:named``.
    A field's own values (the ids of the mails a mailbox lists) choose nothing; the record a field
    names by its name ("Old draft = contracts-2024.pdf", a body too short to be prose) does."""
    if not name.startswith("outside:") or from_prose(name):
        return name
    flags = name.split(":")[2:]
    if "near" in flags or any(f.startswith("order-") for f in flags):
        return name
    return f"{name}:named"


def from_prose(name: str) -> bool:
    """Outside prose, or a result given values from it; not a field of outside content."""
    flags = name.split(":")[3:]
    return "from-prose" in flags if "via" in flags else "field" not in flags


def latest_within(rows: list[HashedRow], room: int) -> tuple[list[HashedRow], int]:
    """The latest of ``rows`` (oldest first) whose packed form fits ``room`` bytes, and the room
    left (a row's hashes at 8 bytes in base64, and its shape)."""
    used, start = 0, len(rows)
    while start > 0:
        k, naming, acted, words = rows[start - 1]
        forms = (*naming, *acted, *words)
        size = (len(k) + sum(map(len, forms))) * 11 + 3 * len(forms) + 12
        if used + size > room:
            break
        used, start = used + size, start - 1
    return rows[start:], room - used


__all__ = ["from_prose", "latest_within", "linked_as", "names_a_record"]
