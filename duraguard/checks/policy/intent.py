"""Whether the person asked for what a tool does: the words people use to ask for each action.

A tool's action is read from the verb of its name (``send_money``: send, with money: pay;
``delete_file``: delete) or from its catalogue entry's ``asked_by``; the person's latest turn
asks for it where it holds one of those words, not negated ("don't send anything"), or such a
verb in German, French, Spanish, Italian, Portuguese or Dutch (:func:`asked_abroad`). A turn that
hands the choice to content ("do what the email says", "handle the tasks in my inbox") is
delegation: the action may be real, and a person should confirm it, unless the person named
that content by name and nothing in the session addressed an AI agent (:mod:`.task`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from ..._imperatives import NOUNS_TOO
from ..._verbs_abroad import DETERMINERS, kinds_said
from .catalogue import ToolInfo
from .inference import AMBIGUOUS, LEADING_SEND, SEND_VERBS, WRITE_VERBS, name_words

_SEND = (
    "send", "email", "e-mail", "mail", "forward", "reply", "respond", "answer", "write", "post",
    "message", "dm", "text", "tell", "notify", "inform", "contact", "ping", "cc", "let",
    "remind", "share", "follow", "thank", "ask", "invite", "introduce", "welcome", "update",
    "report", "alert", "get back",
)  # fmt: skip
_POST = (
    "post", "share", "announce", "say", "write", "message", "send", "reply", "publish",
    "broadcast", "tell", "notify", "let", "ping", "remind", "thank", "welcome", "ask", "update",
    "summarize", "summarise", "report",
)  # fmt: skip
_PAY = (
    "pay", "transfer", "wire", "send", "refund", "reimburse", "settle", "split", "tip", "top",
    "donate", "repay", "return", "give", "cover", "contribute", "schedule",
)  # fmt: skip
_SCHEDULE = (
    "schedule", "book", "create", "add", "set", "arrange", "plan", "organize", "organise",
    "invite", "put", "block", "remind",
)  # fmt: skip
_UPDATE = (
    "update", "change", "edit", "modify", "set", "move", "reschedule", "rename", "correct",
    "fix", "adjust", "postpone", "shift", "push", "replace", "switch", "amend", "increase",
    "decrease", "raise", "lower", "reset", "make", "rotate", "renew",
)  # fmt: skip
_BOOK = ("book", "reserve", "reservation", "rent", "hire", "order", "secure", "grab")
_DELETE = (
    "delete", "remove", "trash", "erase", "clear", "clean", "purge", "discard", "rid", "drop",
    "archive", "wipe", "empty", "tidy",
)  # fmt: skip
_CREATE = (
    "create", "make", "write", "add", "save", "draft", "start", "set", "generate", "compose",
    "append", "put", "jot", "prepare", "store", "keep",
)  # fmt: skip
_SHARE = ("share", "give", "grant", "send", "invite", "access", "forward", "collaborate")
_ADD = ("add", "put", "include", "invite", "insert", "join", "bring", "welcome", "onboard")
_CANCEL = ("cancel", "call", "delete", "remove", "drop", "decline", "skip")

SYNONYMS: dict[str, tuple[str, ...]] = {
    "send": _SEND, "email": _SEND, "mail": _SEND, "message": _SEND, "dm": _SEND, "sms": _SEND,
    "text": _SEND, "ping": _SEND, "slack": _SEND,
    "reply": ("reply", "respond", "answer", "write", "send", "email", "get back"),
    "respond": ("reply", "respond", "answer", "write", "send", "email"),
    "forward": ("forward", "send", "share", "pass", "email"),
    "notify": ("notify", "tell", "inform", "let", "alert", "message", "send", "email", "remind"),
    "post": _POST, "announce": _POST, "publish": _POST, "broadcast": _POST,
    "pay": _PAY, "transfer": _PAY, "wire": _PAY,
    "refund": ("refund", "reimburse", "pay", "return", "send", "give"),
    "schedule": _SCHEDULE, "reschedule": _UPDATE,
    "update": _UPDATE, "change": _UPDATE, "edit": _UPDATE, "modify": _UPDATE, "set": _UPDATE,
    "move": _UPDATE, "rename": _UPDATE, "reset": _UPDATE,
    "book": _BOOK, "reserve": _BOOK, "rent": _BOOK, "order": _BOOK, "buy": _BOOK,
    "purchase": _BOOK,
    "delete": _DELETE, "remove": _DELETE, "trash": _DELETE, "erase": _DELETE, "clear": _DELETE,
    "purge": _DELETE, "archive": _DELETE, "wipe": _DELETE, "drop": _DELETE,
    "create": _CREATE, "make": _CREATE, "write": _CREATE, "save": _CREATE, "append": _CREATE,
    "draft": _CREATE, "new": _CREATE, "generate": _CREATE, "insert": _CREATE,
    "add": _ADD, "share": _SHARE, "invite": (*_ADD, "invite"), "cancel": _CANCEL,
}  # fmt: skip
"""The words a person uses to ask for each verb a tool name may lead with."""
_NOUN_HINTS: dict[str, tuple[str, ...]] = {
    "money": _PAY, "payment": _PAY, "transaction": _PAY, "transfer": _PAY, "iban": _PAY,
    "event": _SCHEDULE, "meeting": _SCHEDULE, "calendar": _SCHEDULE, "appointment": _SCHEDULE,
    "reservation": _BOOK,
}  # fmt: skip

_GENERIC_VERBS = frozenset({"send", "create", "add", "make", "new", "schedule", "transfer"})
"""Verbs whose meaning the noun after them decides (``send_money`` is a payment). Not the
verbs of changing something (``update_scheduled_transaction`` changes a payment; asking to
pay or to schedule one does not ask for that)."""
_TO_ME = re.compile(r"\s+(?:me|us)\b(?!\s+(?:an?|the)\s+(?:email|message|mail|copy|dm|text))", re.I)
"""``tell me``, ``let me know``: an answer to the person, not a message sent out."""
_NEGATED = re.compile(r"\b(?:don'?t|do not|never|no|without|not|stop)\s+(?:\w+\s+){0,2}$", re.I)
_DELEGATES = re.compile(
    r"\b(?:do|follow|complete|handle|take care of|carry out|act on|perform|execute|deal with|"
    r"go through|work through|process|action)\b[^.?!]{0,60}?\b(?:instructions?|actions?|tasks?|"
    r"to-?dos?|requests?|steps|asks?|what (?:it|they|he|she|the \w+|(?!(?:you|i|we)\b)"
    r"[\w'@-]+(?:\.[\w-]+)*) (?:says?|asks?|wants?))\b"
    r"|\bas (?:described|instructed|requested|asked|explained|listed|specified) in\b"
    r"|\bwhatever (?:it|they|he|she|the \w+) (?:says?|asks?)\b",
    re.I,
)


def stem(word: str) -> str:
    """A crude stem, the same for ``sends``, ``sent``-less forms: ``booked``/``booking`` ->
    ``book``, ``scheduled``/``schedule`` -> ``schedul``."""
    w = word.lower()
    if w.endswith("s") and not w.endswith(("ss", "ies", "es")) and len(w) > 4:
        w = w[:-1]  # bookings -> booking, then the suffix below
    for suffix, keep in (
        ("ies", "y"),
        ("ied", "y"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: len(w) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
                w = w[:-1]
            break
    return w.removesuffix("e") if len(w) > 3 else w


@lru_cache(maxsize=1024)
def asked_words(name: str, given: tuple[str, ...] | None = None) -> frozenset[str] | None:
    """The stems of the words that ask for the tool ``name``, or ``None`` where its name holds
    no verb this module knows (say ``asked_by`` in its catalogue entry)."""
    if given is not None:
        return frozenset(stem(w) for w in given)
    words = name_words(name)
    verbs = [
        w
        for i, w in enumerate(words)
        if w in SYNONYMS
        and (i == 0 or ((w in WRITE_VERBS or w in SEND_VERBS) and w not in AMBIGUOUS))
        and (i == 0 or w not in LEADING_SEND)
    ]
    if not verbs:
        return None
    out = {stem(w) for v in verbs for w in (v, *SYNONYMS[v])}
    if verbs[0] in _GENERIC_VERBS:  # send_money pays, create_calendar_event schedules
        for w in words:
            out.update(stem(x) for x in _NOUN_HINTS.get(w, ()))
    # What is changed was made by a verb too: "schedule my rent for July" changes a
    # scheduled transaction (update_scheduled_transaction).
    out.update(stem(w) for w in words[1:] if w.endswith("ed") and stem(w) in _VERB_STEMS)
    return frozenset(out)


_VERB_STEMS = frozenset(stem(w) for w in SYNONYMS)
_NOUNS = frozenset(stem(w) for w in NOUNS_TOO)
"""Words that name a thing as often as they ask for an action ("the email", "email Bob"): after
a determiner, the turn may or may not ask ("summarise the email", "shoot Bob an email")."""
_DETERMINER = re.compile(
    r"\b(?:" + "|".join(map(re.escape, sorted(DETERMINERS, key=len, reverse=True))) + r")\s*$",
    re.I,
)
"""A participle after a determiner is no request: "my scheduled payments", "the deleted file"
(a noun still is: "do the bookings"); nor a word of :data:`_NOUNS` after one of German,
French, Spanish, Italian, Dutch or Portuguese ("Lies die E-Mail", "Lis l'e-mail"): it names a
thing, and the turn may or may not ask."""


def asks_for(turn: str, info: ToolInfo | None, tool: str) -> bool | None:
    """Whether the turn asks for what ``tool`` does; ``None`` where that cannot be told (the
    tool's name says no action; or only a word of :data:`_LOOSE` is said, of nothing it asks
    by: "split the dinner with Anna" may ask for a payment or not; or only a message word after
    a determiner: "the email from Bob", "an email to Bob")."""
    words = asked_words(tool, info.asked_by if info is not None else None)
    if words is None:
        return None
    loose = _loose_for(tool, stem("pay") in words, stem("send") in words)
    unsure = False
    for m in re.finditer(r"[a-z][a-z'-]*", turn.lower()):
        before = turn[max(0, m.start() - 30) : m.start()]
        word = stem(m.group(0))
        if word in words and not _NEGATED.search(before):
            if word in loose and not loose[word].match(turn, m.end()):
                unsure = True  # "the top reviews", "split the dinner": money or not
                continue
            if word in _ANSWERING and _TO_ME_ALONE.match(turn, m.end()):
                continue  # "tell me", "remind me": an answer to the person, not a message
            if word == "thank" and _THANKS.match(turn, m.start()) and not _PASSED_ON.search(before):
                continue  # "Thanks a lot!", "thank you": said to the agent
            if word in _NOUNS and _DETERMINER.search(before):
                unsure = True  # "the email from Bob" names a thing; "shoot Bob an email" asks
                continue
            if not (m.group(0).endswith("ed") and _DETERMINER.search(before)):
                return True
    abroad = asked_abroad(turn, words)
    return abroad if abroad is not False else None if unsure else False


def asked_abroad(turn: str, words: frozenset[str]) -> bool | None:
    """Whether the turn asks, in German, French, Spanish, Italian, Portuguese or Dutch
    (:func:`duraguard._verbs_abroad.kinds_said`), for a kind of action among the stems
    ``words``: ``None`` where it also holds a word saying not, but or except (the call is
    asked: "lösche nichts außer ..." cannot be read safely)."""
    kinds, negated = kinds_said(turn)
    if not any(stem(kind) in words for kind in kinds):
        return False
    return None if negated else True


_MONEY_AFTER = re.compile(
    r"\s+(?:up\b|(?:[\w'-]+\s+){0,3}?(?:bills?|costs?|checks?|tabs?|amounts?|money|difference|"
    r"payments?|rent|fees?|share|prices?|expenses?|transactions?|transfers?|refunds?|balance|"
    r"invoices?|deposit|euros?|dollars?|pounds?|eur|usd|gbp|yen|half|fiver|tenner)\b"
    r"|(?:[\w'-]+,?\s+){0,4}?[$\u20ac\u00a3\u00a5]?\d)",
    re.I,
)
"""Money within a few words after a word of :data:`_LOOSE`."""
_TO_AN_EVENT = re.compile(
    r"(?:\s+[^\s]*[^\s.!?;:]){0,12}?\s+to\s+(?:(?:the|my|our|a|an|his|her|their|this|that|"
    r"tomorrow's|today's|next)\s+)*(?:[\"\u201c\u2018']|(?:[\w'-]+\s+){0,3}?(?:meeting|call|"
    r"event|party|dinner|lunch|breakfast|wedding|interview|session|workshop|webinar|conference|"
    r"sync|standup|stand-up|review|demo|celebration|offsite|gathering|meetup|talk|launch|"
    r"ceremony|game|show|trip|drinks|coffee|appointment|catch-up|kickoff|kick-off)s?\b)",
    re.I,
)
"""An invitation to an event after "invite" and whom it names (a list of addresses, of names):
a message sent out. An event is named by its kind or by a title in quotes."""
_LOOSE: dict[str, re.Pattern[str]] = {
    **{
        stem(w): _MONEY_AFTER
        for w in ("top", "split", "cover", "return", "tip", "give", "schedule")
    },
    "call": re.compile(r"\s+off\b", re.I),
    stem("invite"): _TO_AN_EVENT,
}
"""Words that ask for a tool's action only with what follows them, unless the tool's own name
says them: a payment only said of money ("top up", "split the bill", "return the difference"),
not of anything ("the top reviews", "split the reviews into good and bad"); a cancelling only
as "call off" (not "call him back"); a message sent out only as an invitation to an event
("invite Bob to the budget meeting"), not to a workspace, a channel or a team, which another
tool adds them to ("invite Dora to Slack")."""


@lru_cache(maxsize=1024)
def _loose_for(tool: str, pays: bool, sends: bool) -> Mapping[str, re.Pattern[str]]:
    """The words of :data:`_LOOSE` that ask for ``tool`` only with what follows them: not those
    its own name says, the words of money only for a tool that pays, the invitation only for
    one that sends."""
    own = {stem(w) for w in name_words(tool)}
    return MappingProxyType(
        {
            w: after
            for w, after in _LOOSE.items()
            if w not in own
            and (pays or after is not _MONEY_AFTER)
            and (sends or after is not _TO_AN_EVENT)
        }
    )


_ANSWERING = frozenset(
    stem(w)
    for w in (
        "tell",
        "let",
        "remind",
        "inform",
        "ask",
        "update",
        "answer",
        "report",
        "show",
        "give",
    )
)
"""Verbs a person says back to themselves for an answer ("tell me the rating", "remind me",
"let me know", "give me the total"): they ask for no message sent out nor payment made. Not
"send me", "email me" or "forward me", which may mean a message to the person's own address."""
_TO_ME_ALONE = re.compile(
    r"\s+me\b(?!\s+(?:and|&|or|,)|\s+(?:an?|the)\s+(?:email|message|mail))", re.I
)
"""The person alone after the verb: not "us" (a team, a channel) nor "me and Alice"."""
_THANKS = re.compile(r"thanks\b|thank\s+(?:you|u)\b", re.I)
"""The person's thanks to the agent, not a thank-you sent to someone ("thank Bob for ...")."""
_PASSED_ON = re.compile(
    r"\b(?:say|pass(?:\s+on)?|give|send|extend|express|convey|forward|my|our|his|her|their)\s+"
    r"(?:\w+\s+)?$",
    re.I,
)
"""Thanks that are passed on ("say thanks to Bob", "give my thanks to the team")."""


def verbs_said(turn: str) -> set[str]:
    """The stems of the turn's words that may ask for an action: not those negated ("don't
    send anything") nor those the person addresses back to themselves ("send me the rating",
    "email us the total": an answer, not a message sent out)."""
    out: set[str] = set()
    for m in re.finditer(r"[a-z][a-z'-]*", turn.lower()):
        if _TO_ME.match(turn, m.end()) or _NEGATED.search(turn[max(0, m.start() - 30) : m.start()]):
            continue
        out.add(stem(m.group(0)))
    return out


_OWN_LIST = re.compile(r"\b(?:following|these|below)\b", re.I)


def delegates(turn: str) -> str | None:
    """The words where a turn hands the choice of actions to content, or ``None``. A turn that
    lists the tasks itself ("perform the following tasks: 1. ...") hands nothing over."""
    for m in _DELEGATES.finditer(turn):
        after = turn[m.end() : m.end() + 40].lstrip()
        if _OWN_LIST.search(m.group(0)) or after.startswith((":", "below")):
            continue
        return m.group(0)
    return None


_KIND_WORDS: dict[str, str] = {
    "email": r"e-?mails?|(?:e-?mail\s+)?address(?:es)?",
    "url": r"links?|urls?|websites?|sites?|web\s?pages?|pages?",
    "iban": r"(?:bank\s+)?accounts?|ibans?",
    "phone": r"(?:phone\s+)?numbers?",
    "handle": r"channels?|handles?|usernames?",
}
_ANY_KIND = r"details|info|information|contacts?|contact\s+details"
_UNFILLED = (
    r"\b(?:her|his|their|its|the|your|my|our|necessary|right|relevant|correct|proper|new)\s+"
    r"(?:[a-z-]+\s+)?(?:{})\b"
)


_FOUND_IN = (
    r"\b(?:find|see|get|look\s+up|check|read)\s+(?:(?:the|her|his|their|its|all|any|more)\s+)?"
    r"(?:[a-z-]+\s+)?(?:{})\s+(?:in|on|at|from)\b"
)
"""``find details in Bob's message``, ``see her address on the page``: where to find it."""


def points_for(turn: str, kind: str, role: tuple[str, ...]) -> bool:
    """Whether the turn speaks of a destination of this kind without giving it ("her e-mail",
    "the necessary channels", "the details", "find details in the message"): the person leaves
    where it goes to content they name. ``kind`` is the destination's kind (``email``, ``url``,
    ``iban``...; empty for a name), ``role`` the words of the argument's name (``user``,
    ``channel``)."""
    words = [_ANY_KIND]
    if kind in _KIND_WORDS:
        words.append(_KIND_WORDS[kind])
    words += [re.escape(w) + "s?" for w in role if len(w) > 2]
    alternatives = "|".join(words)
    return any(
        re.search(pattern.format(alternatives), turn, re.I) is not None
        for pattern in (_UNFILLED, _FOUND_IN)
    )
