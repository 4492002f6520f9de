"""How far the words of an order reach around its verb (``_imperatives.order_lines``).

An order's words are the sentence its verb is in. Where its object points back ("delete them",
"delete the file", "get rid of it"), they reach back over what says what "them" is: the two
sentences or lines before (:func:`reach_back`), a list right above counted as one. Where its object
comes after it ("delete the following:", a heading "Files to delete:"), they reach over the lines
after (:func:`reach_ahead`).
Every reach is bounded in characters, so a hostile text costs no more than a short one.
"""

from __future__ import annotations

import re

BEFORE, AFTER = 300, 600
"""How far the words of an order reach around its verb (characters)."""
SENTENCE_END = re.compile(r"[.!?]+(?=\s+[\"'(\[]?[A-Z0-9])|\n")
_POINTED = r"(?:listed|mentioned|named|noted|shown|given|flagged)"
_THINGS = (
    r"(?:files?|documents?|docs?|items?|entries|entry|records?|attachments?|folders?|events?"
    r"|meetings?|payments?|transactions?|transfers?|messages?|emails?|ones?)"
)
POINTS_BACK = re.compile(
    r"[^\W\d_][\w-]*?(?:\s+rid\s+of)?\s+(?:(?:all|both|each|any|one)\s+of\s+)?(?:them|it|those|these"
    r"|both|that|the above|the ones? above|this one|that one|the same"
    r"|sie|es|ihn|diese[sn]?|questo|questi|quello|quelli|deze|dit|esto|eso|isso|isto"
    rf"|(?:each|all|every(?:thing|\s+one)?|the\s+(?:items?|files?|ones?|entries|records?))\s+"
    rf"(?:(?:one\s+)?{_POINTED}(?:\s+above)?|above)"
    rf"|(?:the|this|that|these|those|said|such|the\s+same|the\s+aforementioned|the\s+above)"
    rf"\s+{_THINGS}"
    rf"|what\s+(?:i|we|is|was|were|has\s+been|i've|we've|i\s+have|we\s+have)\s+{_POINTED})"
    rf"\b(?!\s*[:\-]|\s+(?:{_POINTED}\s+)?(?:below|hereafter|next|further\s+down))",
    re.I,
)
"""An order whose object points back ("delete them", "cancel it", "get rid of it", "delete
each listed above", "delete what I listed", "delete the file", "remove said file"): its words
reach back over what says what "them" is."""
_NEXT = (
    r"(?:one|files?|items?|entry|entries|lines?|records?|documents?|payments?|transactions?|ids?)"
)
_ARROWS = (
    r"[\u2190-\u21ff\u2794-\u27bf\u27f0-\u27ff\u2900-\u297f\u2b00-\u2bff\u25bc\u25bd\u25be"
    r"\u261b\u261e\u261f\u23ec\U0001f447\U0001f449\U0001f53d\U0001f53b]\ufe0f?"
    r"|[-=~\u2013\u2014]+>|>>"
)
"""An arrow: one of Unicode's (arrows, dingbats, pointing hands) or drawn ("->", "=>", "~>")."""
POINTS_AHEAD = re.compile(
    r"[^\W\d_][\w-]*?\b[^\n.!?]{0,40}?(?::[*_ \t]*(?:\n|\Z)"
    r"|\b(?:the\s+following|below|as\s+follows|underneath|beneath|what\s+follows"
    rf"|the\s+next\s+(?:\w+\s+(?:of\s+)?)?{_NEXT}|the\s+(?:\w+\s+)?{_NEXT}\s+(?:that\s+)?follows?"
    rf"|(?:what|that|which)\s+(?:comes?|is\s+listed|are\s+listed)\s+(?:next|after)|hereafter"
    rf"|further\s+down|subsequent\s+{_NEXT}|(?:line|row|paragraph)\s+(?:after|below)\s+this)\b"
    rf"|[ \t]*(?:{_ARROWS})[ \t]*(?:\n|\Z)|[ \t]*\n[ \t]*(?:{_ARROWS}))",
    re.I,
)
"""An order whose object comes after it ("delete the following:", "remove these:", "delete the
files listed below", "delete the next one", "delete \u2192" or "->" at a line's end; not
"Edit \u2192 Delete \u2192 Confirm", an arrow mid-line; an arrow that starts the next line,
"Delete\n\u2192 a.pdf"; "the file in the line after this"). The verb in any script ("Lösche
folgende Datei:")."""
HEADING = re.compile(
    r"^(?![ \t#*>\-\u2022\d.)]*(?:how|what|where|when|why|whether|who|which)\b)"
    r"[^\n]{0,48}?\b(?:to|zu|\u00e0|para|da|te|should|must|shall|bitte|auch)[ \t]+"
    r"(?:(?:[^\W\d_]+ly|also|then|now|just)[ \t]+)?\Z",
    re.I | re.M,
)
"""What stands before the verb of a heading that orders what it heads ("Files to delete:",
"**Payments to cancel:**", "## Files to permanently delete", "Zu löschen:", "À supprimer :"),
from its line's start: up to 48 characters and "to" or "should" ("Files you should delete:";
not "How to delete:", which tells how).
The verb is one that ends its heading (:data:`HEADS`)."""
HEADS = re.compile(
    r"[^\W\d_][\w-]*(?:[ \t]+(?:[^\W\d_]+ly|today|tonight|now|asap|first|next|soon|too"
    r"|as well|this week|this month|later|tomorrow|(?:by|before) [^\W\d_]+))?[ \t*_]*"
    r"(?:\(\d+\)[ \t*_]*)?(?::|[\u2013\u2014]|[ \t]-[ \t]|<|\||\n|\Z)",
    re.I,
)
"""The verb of such a heading and what ends it: a colon, a dash, an HTML tag or the line's end
("Files to delete permanently:", "Files to delete today:", "Files to delete (1):", "**Files to
delete**")."""


_A_LIST = r"(?:[ \t]+(?:list|queue|items?|candidates?|batch))?(?:[ \t]*\(\d+\))?"
LISTS = re.compile(rf"[^\W\d_][\w-]*{_A_LIST}[ \t*_]*:[ \t*_]*(?:\n|\Z)", re.I)
"""A verb and a colon that end its line ("Delete:\n- a.pdf", "Delete list:"): an order to delete
what is listed after it (of other kinds, a heading: "Update:", "Post:")."""
HEADING_NOUNS = {
    "deletion": "delete",
    "removal": "delete",
    "erasure": "delete",
    "cleanup": "delete",
}
"""Nouns of an action that head what it is done to ("Files for deletion:", "Deletion list:",
"Pending removal:"); an order only there (:func:`noun_heads`), never at a clause's start
("Deletion of old files is automatic")."""
_NOUN_HEADS = re.compile(rf"[^\W\d_]+{_A_LIST}[ \t*_]*(?::[ \t*_]*(?:\n|\Z)|[ \t]*\|)", re.I)
_DONE_HEADS = re.compile(r"[^\W\d_]+[ \t*_]*(?::|[ \t]*\|)", re.I)
_AFTER_TO_BE = re.compile(r"\bto[ \t]+be[ \t]+\Z", re.I)
_FOR = re.compile(
    r"\b(?:for|pending|awaiting|marked for|scheduled for|slated for|up for)[ \t]+\Z", re.I
)
_FOR_HEADS = re.compile(rf"[^\W\d_]+[ \t*_]*(?::|[ \t]*(?:{_ARROWS}))", re.I)


def noun_heads(text: str, at: int, noun: bool) -> bool:
    """Whether the word at ``at`` (a noun of :data:`HEADING_NOUNS`, or else a participle) heads
    what it is done to: ends its line with a colon ("Files for deletion:", "Deletion list:"), or
    after "for" or "pending" has a colon or an arrow after it ("Marked for deletion: X"), or
    a table's cell ("| contracts-2024.pdf | for deletion |"); a participle after "to be" and before
    a colon or a cell's end ("To be deleted:", "Files to be deleted: X", "| to be deleted |")."""
    if noun:
        if _FOR.search(text, max(0, at - 16), at) and _FOR_HEADS.match(text, at):
            return True  # "Marked for deletion: X", "For removal -> X"
        return _NOUN_HEADS.match(text, at) is not None
    return _AFTER_TO_BE.search(text, max(0, at - 12), at) is not None and bool(
        _DONE_HEADS.match(text, at)
    )


def heading_at(text: str, at: int) -> bool:
    """Whether the verb at ``at`` is the verb of a heading that orders what it heads: its
    object is what comes after it, over the lines after (:func:`reach_ahead`)."""
    return (
        HEADS.match(text, at) is not None and HEADING.search(text, max(0, at - 64), at) is not None
    )


BACK_SENTENCES, AHEAD_LINES = 2, 8
"""Sentences or lines read before an order that points back, and lines after one whose object
comes after it."""


_SAYS = re.compile(r"[^\W_]")
"""A letter or a digit: a line without one (blank, a table's separator, a rule) says nothing."""
_ITEM = re.compile(r"\s*(?:[-*+\u2022\u2023\u25e6|>]|\d{1,3}[.)]\s)")
"""A line that is an item of a list or a row of a table."""


def reach_back(text: str, start: int) -> int:
    """Where the :data:`BACK_SENTENCES` sentences or lines before ``start`` begin, at most
    :data:`BEFORE` characters back: lines that say nothing are not counted, and the items of a
    list (or the rows of a table) right above count as one ("Stale files:\n- a.pdf\n- b.pdf\n
    Delete them.")."""
    floor = max(0, start - BEFORE)
    starts = [floor, *(m.end() for m in SENTENCE_END.finditer(text, floor, max(floor, start)))]
    said = [
        a for a, b in zip(starts, [*starts[1:], start], strict=True) if _SAYS.search(text, a, b)
    ]
    units, listed, reach = 0, False, floor
    for a in reversed(said):
        item = _ITEM.match(text, a) is not None
        units += not (item and listed)
        if units > BACK_SENTENCES:
            return reach
        listed, reach = item, a
    return floor


def reach_ahead(text: str, at: int) -> int:
    """Where an order whose object comes after it ends: :data:`AHEAD_LINES` lines on (lines
    that say nothing not counted), at most :data:`AFTER` characters after its verb."""
    end, line, lines = min(len(text), at + AFTER), at, 0
    while lines <= AHEAD_LINES:
        nxt = text.find("\n", line + 1, end)
        if nxt < 0:
            return end
        lines += _SAYS.search(text, line, nxt) is not None
        line = nxt
    return line


_INTRO_COMMA = re.compile(
    r",[ \t]*(?:(?:please|kindly|also|then|just|now)\b[ \t,]{0,4}+){0,2}+\Z", re.I
)
"""A comma, and the words that may stand between it and an order's verb, before the verb."""
_INTRO_START = re.compile(r"(?:\A|\n|[.!?;:](?=\s))[\s\-*\u2022>]*+(?=[^\s])")
"""Where a sentence starts: the text's start, a line's, after a sentence's end or a colon."""
_INTRO = re.compile(r"[A-Za-z][A-Za-z0-9'/\- ]{0,47}")
_LISTED = re.compile(r"\s*(?:,|&|(?:and|or)\b)|\s*\Z", re.I)
"""After a verb: a list goes on ("shuttle, transfer and breakfast"), or nothing follows."""
INTRO_WORDS = 8
"""The most words of an opening phrase before a comma and an order ("Before you finish, send")."""


def after_intro(text: str, back: int, at: int, end: int) -> bool:
    """Whether the verb at ``at`` (ending at ``end``) follows an opening phrase and a comma
    at a sentence's start ("Before you finish, send", "Dear assistant, change"): a few words
    of letters, none a list's ("Airport shuttle, transfer and breakfast")."""
    comma = _INTRO_COMMA.search(text, back, at)
    if comma is None or _LISTED.match(text, end):
        return False
    starts = [
        m.end() for m in _INTRO_START.finditer(text, max(0, comma.start() - 56), comma.start())
    ]
    if not starts:
        return False
    intro = _INTRO.fullmatch(text, starts[-1], comma.start())
    return intro is not None and len(intro.group().split()) <= INTRO_WORDS


__all__ = [
    "AFTER", "AHEAD_LINES", "BACK_SENTENCES", "BEFORE", "HEADING", "HEADING_NOUNS", "HEADS",
    "LISTS", "POINTS_AHEAD", "POINTS_BACK", "SENTENCE_END", "after_intro", "heading_at",
    "noun_heads", "reach_ahead", "reach_back",
]  # fmt: skip
