"""What the person's words say an action is done to: "Cancel my gym payment" acts on "gym";
"read the email about the team offsite" on no offsite.

The person's turn is keyed (:func:`acted_keys`) by the words after an English verb of acting
(:data:`~duraguard._imperatives.VERBS`). A record a trusted listing returned is the person's
choice where these keys name it (:meth:`duraguard._sourcestore.SourceStore._link_rows`,
:func:`duraguard._rows.linked`). Words in German, French, Spanish, Italian, Portuguese or Dutch
act on nothing: twice an attacker's review found that what such a turn acts on cannot be read
safely. Round twelve's found negations too many ("auf keinen Fall", "onder geen beding"); round
thirteen's, with every turn that says not left out, found 64 of 69 turns that do not ask for the
record and still made it the person's: prohibitions ("Il est interdit de supprimer X", "Prohibido
borrar X"), questions and past events ("Soll ich X löschen?", "Wer hat X gelöscht?"), "only after
my approval", "no longer need to delete". Their delete of a record content names too is asked.
"""

from __future__ import annotations

import re
from itertools import pairwise

from ._imperatives import NOUNS_TOO, PHRASAL, VERBS
from ._provenance import _WORDS, _plain
from ._verbs_abroad import DETERMINERS, ENDS_AN_OBJECT

ACTED = "acted:"
"""The prefix of the person's words keyed as what an action is done to (:func:`acted_keys`)."""
_CLAUSE_END = re.compile(r"[,;:!?()\[\]\"]|\.(?:\s|$)")
_NOT_THE_OBJECT = frozenset(
    {"about", "from", "regarding", "re", "concerning", "in", "on", "at", "by", "with", "for",
     "to", "into", "of", "and", "then", "but", "or", "if", "so", "because", "after", "before",
     "except", "excluding", "besides", "unless", "than", "without", "while", "when", "until",
     "once", "since", "not", "is", "are", "was", "were"}
)  # fmt: skip
"""Words that end what an action is done to: "cancel the offsite on my calendar" cancels "the
offsite"; "read the email about rent" does nothing to rent; "delete every old file except
contracts-2024.pdf" deletes no contracts."""
_NEGATED = frozenset({"don't", "dont", "not", "never", "no", "nor", "without", "stop", "avoid"})
"""Words just before a verb that say it is not to be done."""
MAX_ACTED = 6
"""Words after a verb read as what it is done to."""


def acted_keys(text: str) -> set[str]:
    """What the person's words say an action is done to, keyed ``acted:<token>`` and
    ``acted:<word> <word>``: the words after a verb of :data:`~duraguard._imperatives.VERBS`
    ("delete", "cancel", "change"), up to a word of :data:`_NOT_THE_OBJECT` (or of
    :data:`~duraguard._verbs_abroad.ENDS_AN_OBJECT`: "über", "sauf") or a clause's end.
    "Cancel my gym payment" names "gym"; "read the email about the team offsite" names no
    offsite: a record is the person's choice only where their words act on it (see
    :meth:`duraguard._sourcestore.SourceStore._link_rows`). A word that names a message after
    a determiner ("the email", "die E-Mail") is no verb. Verbs abroad act on nothing (see the
    module's docstring)."""
    keys: set[str] = set()
    tokens = _plain(text[:4000]).split()
    for i, token in enumerate(tokens):
        verb = token.strip(".,;:!?\"'()")
        after = PHRASAL.get(verb, ((), ()))[0]
        took = next((len(p) for p in after if tuple(tokens[i + 1 : i + 1 + len(p)]) == p), None)
        if (verb not in VERBS and took is None) or _NEGATED.intersection(tokens[max(0, i - 2) : i]):
            continue  # "don't delete contracts-2024.pdf", "never cancel the rent" act on neither
        if verb in NOUNS_TOO and i and tokens[i - 1].lstrip("(\"'") in DETERMINERS:
            continue  # "the email", "die E-Mail": a thing, not an action
        span = _span_after(tokens, i + 1 + (took or 0))
        words = [w for t in span for w in _WORDS.findall(t)]
        keys.update(ACTED + t.rstrip(".:/-") for t in span)  # a token whole, as _forms has it
        keys.update(f"{ACTED}{a} {b}" for a, b in pairwise(words))  # a run, by its pairs
    return keys


def _span_after(tokens: list[str], start: int) -> list[str]:
    """The words from ``start`` that an action is done to: up to :data:`MAX_ACTED`, a word that
    ends an object, or a clause's end."""
    span: list[str] = []
    for t in tokens[start : start + MAX_ACTED]:
        word = t.rstrip(".,;:!?\"')")
        if word in _NOT_THE_OBJECT or word in ENDS_AN_OBJECT or not word:
            break
        span.append(word)
        if _CLAUSE_END.search(t[len(word) :] + " "):
            break
    return span
