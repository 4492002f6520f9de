"""What the person's words say an action is done to: "Cancel my gym payment" acts on "gym";
"read the email about the team offsite" on no offsite.

The person's turn is keyed (:func:`acted_keys`) by the words after a verb of acting, English
(:data:`~duraguard._imperatives.VERBS`) or, in a turn with no word saying not, but, except or
keep, of German, French, Spanish, Italian, Portuguese or Dutch (:mod:`duraguard._verbs_abroad`):
"Bitte lösche contracts-2024.pdf", and before a verb that ends its clause ("Kannst du
contracts-2024.pdf löschen?", "dass contracts-2024.pdf gelöscht wird"). A record a trusted
listing returned is the person's choice where these keys name it
(:meth:`duraguard._sourcestore.SourceStore._link_rows`, :func:`duraguard._rows.linked`).
"""

from __future__ import annotations

import re
from itertools import pairwise

from ._imperatives import NOUNS_TOO, PHRASAL, VERBS
from ._provenance import _WORDS, _plain
from ._verbs_abroad import (
    ACCENTS,
    DETERMINERS,
    DONE_SAID,
    ENDS_AN_OBJECT,
    OPENERS,
    VERBS_SAID,
    says_not,
)

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
    ("delete", "cancel", "change"), up to a word of :data:`_NOT_THE_OBJECT` or a clause's end.
    "Cancel my gym payment" names "gym"; "read the email about the team offsite" names no
    offsite: a record is the person's choice only where their words act on it (see
    :meth:`duraguard._sourcestore.SourceStore._link_rows`). A verb abroad
    (:data:`~duraguard._verbs_abroad.VERBS_SAID`: "Bitte lösche contracts-2024.pdf") acts on
    the words after it, or before it where it ends its clause ("Kannst du contracts-2024.pdf
    löschen?"), in a turn with no word saying not, but, except or keep
    (:func:`~duraguard._verbs_abroad.says_not`): otherwise on nothing."""
    keys: set[str] = set()
    tokens = _plain(text[:4000]).split()
    abroad = not says_not(text[:4000])
    for i, token in enumerate(tokens):
        verb = token.strip(".,;:!?\"'()")
        after = PHRASAL.get(verb, ((), ()))[0]
        took = next((len(p) for p in after if tuple(tokens[i + 1 : i + 1 + len(p)]) == p), None)
        if _NEGATED.intersection(tokens[max(0, i - 2) : i]):
            continue  # "don't delete contracts-2024.pdf", "never cancel the rent" act on neither
        if verb in VERBS or took is not None:
            if verb in NOUNS_TOO and i and tokens[i - 1].lstrip("(\"'") in DETERMINERS:
                continue  # "the email", "die E-Mail": a thing, not an action
            span = _span_after(tokens, i + 1 + (took or 0))
        elif abroad and verb.translate(ACCENTS) in VERBS_SAID:
            ends = _CLAUSE_END.search(token[len(token.rstrip(".,;:!?\"')")) :] + " ")
            done = verb.translate(ACCENTS) in DONE_SAID  # "dass X gelöscht wird": X comes before
            span = [] if ends or done else _span_after(tokens, i + 1)
            span = span or _span_before(tokens, i)
        else:
            continue
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


def _span_before(tokens: list[str], end: int) -> list[str]:
    """The words before a verb that ends its clause, back to a word that opens it
    (:data:`~duraguard._verbs_abroad.OPENERS`: "bitte", "du"), ends an object or a clause."""
    span: list[str] = []
    for t in reversed(tokens[max(0, end - MAX_ACTED) : end]):
        word = t.strip(".,;:!?\"'()")
        if _CLAUSE_END.search(t[len(t.rstrip(".,;:!?\"')")) :] + " ") or not word:
            break
        if word in _NOT_THE_OBJECT or word in ENDS_AN_OBJECT or word in OPENERS:
            break
        span.append(word)
    return span[::-1]
