"""Which sources a trusted listing's records are linked to, and what the carried form keeps of them.

Pure and deterministic (it runs inside workflow code). :class:`duraguard._sourcestore.SourceStore`
keys a source that names a record by another of its fields by that record's tiny ids
(:func:`duraguard._rows.linked`). Not every source that names a record counts: a trusted result
never; outside content only where it orders or presses an action, speaks of deleting near the
name, or (round fifteen) says what the person's own words act on ("the old draft you are asked
about is contracts-2024.pdf" where the person asked to "delete the old draft"): content that
tells the agent which record the person meant chose it as surely as content that orders it.
"""

from __future__ import annotations

from ._acted import ACTED
from ._imperatives import VERBS
from ._rows import _FUNCTION_WORDS, HashedRow
from ._sourceindex import _h
from ._verbs_abroad import DETERMINERS

MAX_ALIASES = 64
"""What the person's words act on, kept (the latest) for outside prose that says it."""
_SAID_OF_ANYTHING = frozenset(
    {"anything", "everything", "something", "nothing", "them", "they", "it", "one", "ones",
     "thing", "things", "stuff", "some", "each", "every", "both", "other", "others", "also",
     "just", "please", "now", "today", "then", "there", "here", "what", "which", "whatever",
     "those", "these", "mine", "ours", "more", "most", "less", "only", "too", "very", "such"}
)  # fmt: skip
"""Words of what the person acts on that say nothing of which record: "delete them all"."""


def aliases(keys: set[str]) -> set[int]:
    """What the person's words act on (their ``acted:`` keys, :func:`duraguard._acted.acted_keys`)
    as outside prose holds it: a word of four letters or more ("draft"), or a pair of words
    ("old draft") one of which is such a word, none said of anything ("the", "all", "them"), no
    verb. Hashed as the index holds a token and a word pair of prose."""
    out: set[int] = set()
    for k in keys:
        if not k.startswith(ACTED):
            continue
        words = k[len(ACTED) :].split(" ")
        if len(words) > 2 or not all(w.isalpha() for w in words):
            continue
        if any(w in VERBS or w in _SAID_OF_ANYTHING for w in words):
            continue
        if any(len(w) >= 4 and w not in _FUNCTION_WORDS and w not in DETERMINERS for w in words):
            out.add(_h(" ".join(words)))
    return out


def names_a_record(name: str) -> bool:
    """Whether a source choosing a record by its name counts (:func:`duraguard._rows.linked`),
    whatever else it holds: the person's words; outside prose that orders or presses an action;
    a short field of outside content whose own words order one (a subject "Delete
    contracts-2024.pdf"); either that speaks of deleting near the name (``near``); no trusted
    result, nor mere mention (outside prose that says what the person acts on counts too:
    :func:`says_what_is_acted_on`)."""
    if name == "prompt" or name.startswith("turn:"):
        return True
    if not name.startswith("outside:"):
        return False
    flags = name.split(":")[2:]
    ordered = any(f.startswith("order-") for f in flags) or "near" in flags
    return ordered or ("field" not in flags and ("instructs" in flags or "to-agent" in flags))


def says_what_is_acted_on(name: str) -> bool:
    """Whether a source that holds what the person's words act on (:func:`aliases`) and names a
    record counts as choosing it: outside prose, not its fields (where the words and the name
    may be any two values of a listing of many)."""
    return name.startswith("outside:") and "field" not in name.split(":")[2:]


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


__all__ = ["MAX_ALIASES", "aliases", "latest_within", "names_a_record", "says_what_is_acted_on"]
