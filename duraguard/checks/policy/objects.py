"""What a turn names as the object of a change or a removal, and what a tool acts on.

A tool's object is the nouns of its name (``password`` of ``update_password``, ``email`` of
``delete_email``) and words for them ("rent" and "payment" for a transaction); what a turn asks
to change is the head of the phrase after its verb ("update my rent payment for May":
payment). The task check (:mod:`.task`) weighs the two: a change the turn asks of another
tool's object, or of no credential this tool changes, is not this tool's to make unasked.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..._imperatives import VERBS
from .inference import name_words
from .intent import _CANCEL, _DELETE, _NEGATED, _UPDATE, SYNONYMS, stem

_NOT_OBJECT = frozenset({
    "to", "from", "for", "of", "in", "on", "at", "by", "with", "a", "an", "the", "my", "new", "all",
    "user", "users", "info", "details", "data",
})  # fmt: skip
_OBJECT_WORDS: dict[str, tuple[str, ...]] = {
    "money": ("payment", "transfer", "transaction", "amount", "rent", "bill", "fee", "refund", "iban"),
    "transaction": ("payment", "transfer", "money", "amount", "rent", "bill", "order", "subscription"),
    "email": ("mail", "e-mail", "message", "inbox", "reply", "address"),
    "message": ("dm", "text", "note", "email", "mail", "chat"),
    "event": ("meeting", "appointment", "calendar", "reminder", "call", "lunch", "dinner"),
    "calendar": ("meeting", "appointment", "event", "reminder"),
    "hotel": ("room", "stay", "accommodation", "night"),
    "car": ("vehicle", "rental"),
    "restaurant": ("table", "dinner", "lunch", "meal"),
    "reservation": ("booking", "stay", "room", "table", "ticket", "dinner", "lunch", "hotel",
                    "restaurant", "flight", "trip", "car", "seat"),
    "password": ("login", "credentials", "passcode", "pw", "pin", "passphrase"),
    "iban": ("account", "bank"),
    "file": ("document", "doc", "note", "list", "report", "sheet", "spreadsheet", "attachment",
             "pdf", "photo", "image", "slide", "deck", "presentation", "draft"),
    "webpage": ("website", "page", "site", "url", "link", "web"),
    "channel": ("group", "room", "slack", "workspace"),
    "slack": ("workspace", "team", "channel"),
}  # fmt: skip
"""Words a turn names a tool's object by besides the tool's own ("rent" for a transaction)."""


_NOUNS_TOO = frozenset({"email", "e-mail", "mail", "message", "text", "dm", "post", "order"})
"""Words of :data:`SYNONYMS` that are a tool's object after its verb (``delete_email``)."""


@lru_cache(maxsize=1024)
def object_words(tool: str) -> frozenset[str] | None:
    """The words a turn names what ``tool`` acts on by, as written (one and many): the nouns
    of its name (``password`` of ``update_password``, ``email`` of ``delete_email``) and the
    words for them (:data:`_OBJECT_WORDS`); ``None`` for a tool whose name has no noun. Not
    stems: "not" is no "note", "pinned" no "pin", "book" no "booking"."""
    words = name_words(tool)
    nouns = [
        w
        for i, w in enumerate(words)
        if w not in _NOT_OBJECT and (w not in SYNONYMS or (i > 0 and w in _NOUNS_TOO))
    ]
    if not nouns:
        return None
    return frozenset(
        f for n in nouns for w in (n, *_OBJECT_WORDS.get(n, ())) for f in (w, w + "s", w + "es")
    )


_CHANGING = frozenset(
    stem(w) for w in (*_UPDATE, *_DELETE, *_CANCEL, "cancel", "fix") if w not in ("call", "make")
)
_ASKING = frozenset(stem(w) for words in SYNONYMS.values() for w in words)
_OBJECT_ENDS = frozenset({
    "from", "in", "on", "at", "as", "per", "according", "following", "with", "by", "to", "for",
    "into", "onto", "via", "but", "so", "then", "because", "if", "when", "since", "after",
    "before", "until", "while", "not", "than", "like", "he", "she", "they", "we", "i", "you",
    "who", "which", "that", "it",
})  # fmt: skip
_NOT_HEADS = frozenset({
    "now", "today", "tomorrow", "tonight", "asap", "please", "again", "too", "also", "later",
    "soon", "first", "instead", "back", "here", "there", "right", "away",
})  # fmt: skip
_TOKENS = re.compile(r"[a-z][a-z'-]*|[^\sa-z]")


@lru_cache(maxsize=256)
def acted_on(turn: str) -> frozenset[str]:
    """The words a (casefolded) turn names as what it asks to change or remove: the last word
    (the head) of each phrase in up to 8 words after a verb of changing or removing
    (:data:`_UPDATE`, :data:`_DELETE`), not negated, to the clause's end, a preposition or a
    pronoun ("update my rent payment for May": payment; "the meeting notes he lists": notes),
    and up to 6 words before a participle of one ("my password needs to be changed"). A word
    the turn says elsewhere ("I forgot my password hint, so update my rent") is not what it
    changes, nor a noun before the head ("the hotel site visit")."""
    tokens = [(m.group(), m.start()) for m in _TOKENS.finditer(turn)]
    out: set[str] = set()
    for i, (word, at) in enumerate(tokens):
        if stem(word) not in _CHANGING or _NEGATED.search(turn[max(0, at - 30) : at]):
            continue
        head = None
        for j, (after, _) in enumerate(tokens[i + 1 : i + 9], i + 1):
            if after in ("and", "or", ","):
                if head is not None:
                    out.add(head)  # "my rent payment and my password": each phrase's head
                head = None
                if j + 1 < len(tokens) and stem(tokens[j + 1][0]) in _ASKING:
                    break  # "remove the meeting and report back": another order
                continue
            if after in _OBJECT_ENDS or not after[0].isalpha():
                break
            if not (after.endswith("ly") or after in _NOT_HEADS):
                head = after  # not "accordingly", "now"
        if head is not None:
            out.add(head)  # "the meeting notes": notes; "my rent payment": payment
        if word.endswith("ed"):
            for before, _ in reversed(tokens[max(0, i - 6) : i]):
                if not before[0].isalpha():
                    break
                out.add(before)
    return frozenset(out)


_TARGETS_FROM_CONTENT = re.compile(
    r"(?<![a-z'])[a-z']+\s+(?:also\s+)?(?:lists?|listed|mentions?|mentioned|names?|named|says?"
    r"|said|asks?|asked|cites?|cited|flags?|flagged|specif(?:y|ies|ied)|marks?|marked"
    r"|identif(?:y|ies|ied)|points? to|pointed to|refers? to|referred to|requests?|requested"
    r"|wants?|wanted|suggests?|suggested|recommends?|recommended|gives?|gave|contains?"
    r"|includes?)\b"
    r"|\b(?:listed|mentioned|named|cited|flagged|specified|marked|identified|requested"
    r"|suggested|recommended|given|referenced)\s+(?:in|by|there|above|below)\b"
    r"|\bfrom\s+(?:[a-z]+'s\s+|the\s+|that\s+|this\s+)?(?:email|mail|message|page|notes?"
    r"|document|doc|post|memo|ticket)\b"
    r"|\b(?:instructions?|tasks?|steps?|requests?|todos?|to-dos?|action\s+items?)\s+(?:in|on|from"
    r"|at)\b"
    r"|\b(?:whatever|whichever)\b|\bwhat\s+(?:it|they|he|she|the\s+\w+)\s+\w+",
    re.I,
)
"""A turn that takes the targets of its change from content ("delete the files it lists", "the
file Ann mentioned in #general", "the files from Bob's email", "follow the instructions in
Bob's email", "whatever they say is obsolete"; not "remove him from the channel", where the
tool's own object is), not from its own words ("read the project notes and delete the old
draft"). Read loosely: a turn it does not read stays as strict as before it was read at all."""


_ACTION_VERB = re.compile(
    r"\b(?:"
    + "|".join(sorted(VERBS, key=len, reverse=True))
    + r"|get\s+rid\s+of|clean\s+up|take\s+care\s+of|do|handle|act\s+on|follow|carry\s+out)\b",
    re.I,
)
"""A verb of an action (:data:`duraguard._imperatives.VERBS`, "clean up", "do")."""

MAX_TURN_READ = 4000
"""Characters of a turn read for a hand-off of its targets (a hand-off past them is not read:
the stricter answer)."""


def takes_targets_from_content(turn: str) -> bool:
    """Whether ``turn`` takes the targets of its change from content it names
    (:data:`_TARGETS_FROM_CONTENT`, after a verb of an action: "delete the files it lists", not
    "summarise what the newsletter says and delete the old draft"): only then does that content
    pick the target."""
    text = turn[:MAX_TURN_READ]
    verb = _ACTION_VERB.search(text)
    return verb is not None and _TARGETS_FROM_CONTENT.search(text, verb.end()) is not None
