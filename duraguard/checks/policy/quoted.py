"""A value the person quoted for an argument, against the call's: "update the password to
'1j1l-2k3j'", and the call takes the password a transaction's subject says.

Part of the outside content check in ``task`` mode (:mod:`.task`): a value of the call that
came only from outside content, where the person's turn quotes another for its argument, is
refused. Where that content's words read as an order to act, the quote may stand a few words
from the argument's name; otherwise it must be said as the argument's ("the password to ...",
"the PIN 9911"), and only a credential is held to it: a title or a subject the model words its
own way may differ from the person's words and be theirs, and a payee named by name is judged
where it goes (the labels check). A credential set to a value that neither the person nor a
trusted tool gave is asked whatever the turn says (:func:`credential_from_outside`): whoever
wrote the content it came from may know it.
"""

from __future__ import annotations

import re

from .call import Call, Stop
from .inference import name_words
from .intent import delegates
from .origins import Origin, Origins

CREDENTIALS = frozenset(
    f
    for w in ("password", "passcode", "pin", "credential", "secret", "passphrase")
    for f in (w, w + "s")
)
"""What a tool that changes a credential acts on, as a turn writes it: the person's turn asks
for that change only in words that name it ("change my login credentials"), never by asking to
change something."""
_CREDENTIAL_NAMES = ("password", "passcode", "pin", "passphrase")
"""The words a turn may give a credential's value after ("change my PIN to ...")."""


def named_other(call: Call, o: Origins) -> Stop | None:
    """A value of the call taken only from outside content where the person's turn gives
    another for its argument ("update the password to '1j1l-2k3j'", and the call takes what a
    transaction's subject says): refused, for a credential whatever the content's words, for
    any value where they read as an order to act. Not where the turn hands the actions to that
    content, named."""
    turn = call.session.turns[-1]
    handed = delegates(turn) is not None
    for v in o.all:
        outside = v.of("outside")
        if not outside or v.of("person") or v.of("trusted"):
            continue
        if handed and any(o.vouched(s, v) for s in outside):
            continue
        orders = next((s.orders[0] for s in outside if s.orders and not s.bare), None)
        if orders is None and (v.path.count("/") > 1 or not _credential(v)):
            continue  # a list's item, a title, a payee named by name for its account
        theirs = _quoted_for(turn, v, _AROUND if orders else _SAID_AS)
        if theirs is None:
            continue
        arg = v.arg
        says = f" that tells its reader to {orders} something" if orders else ""
        return Stop(
            "outside_content",
            f"the person named {theirs!r} for {arg}, but this call takes {v.shown}, from outside "
            f"content ({o.named(outside[0])}){says}. Use what the person named, or tell them what "
            "the content asks.",
            path=v.path,
        )
    return None


def credential_from_outside(o: Origins) -> Origin | None:
    """A credential the call sets (an argument named for one: ``password``, ``pin``) whose value
    neither the person nor a trusted tool gave (from outside content, or matched to nothing):
    whoever wrote that content may know it, whatever the person asked ("update my password as
    IT's email says" may follow a phishing mail)."""
    for v in o.all:
        if not _credential(v) or v.of("person") or v.of("trusted"):
            continue
        if not v.of("outside") and any(str(v.value) in t for t in o.call.session.turns):
            continue  # the person's, written as they wrote it ("Tr!cky-Otter-2024.")
        return v  # from outside content, or matched to nothing ("Hunter-2024!")
    return None


def _credential(v: Origin) -> bool:
    """Whether a value is a credential's (its argument is named for one): a call that takes
    another than the one the person gave is not the person's, whatever content's words. Not a
    destination: the person names a payee by name and the call takes its account ("the
    recipient is 'ACME Energy'"); the labels check judges where a call goes."""
    name = v.path.split("/")[1] if "/" in v.path else ""
    return any(w in CREDENTIALS for w in name_words(name))


_QUOTES = "'\"\u2018\u2019\u201c\u201d`\u00ab\u00bb\u300c\u300d"
_QUOTE = (
    rf"(?<![^\W\d_])[{_QUOTES}]|[{_QUOTES}](?![^\W\d_])|[\"\u201c\u201d`\u00ab\u00bb\u300c\u300d]"
)
"""A quote mark, but not an apostrophe between two letters ("Bob's note")."""


_AROUND = rf"[^{_QUOTES}\n.]{{0,16}}?"
"""Between an argument's name and the value quoted for it: a few words ("the password of the
user to '1j1l'"), where the value came from an order to act."""
_SAID_AS = r"\s*(?:(?:to(?:\s+be)?|is(?:\s+now)?|be|now|=|:)\s*:?\s*)?"
"""Between them otherwise: the value said as the argument's ("the password to '1j1l'", "the
subject 'Hi'"), not one it is likened to ("the same participants as 'Intro meeting'")."""
_BARE = r"(?:to(?:\s+be)?|is(?:\s+now)?|=|:)\s*([^\s'\"]++)"
"""A credential's value unquoted ("change my password to 1j1l-2k3j."): the word after, kept
where it holds a digit or a sign (:func:`_bare`), so "to the one in the email" is none."""
_NOT_THIS = re.compile(
    r"\b(?:old|current|previous|existing|temporary|former|present|last)\s+(?:\w+\s+)?\Z", re.I
)
"""A value the person names as another than the one to set ("my old password is 'X'")."""


def _quoted_for(turn: str, v: Origin, between: str = _AROUND) -> str | None:
    """A value the turn gives for this argument, other than the call's: its name's word, what
    ``between`` allows, then a quoted value ("update the password to '1j1l-2k3j'", "the subject
    'Hi'"); for a credential also under another of its names ("my PIN to ...") and unquoted
    ("... to 1j1l-2k3j."). Not one the person names as their old or current one. ``{hotel_name}``
    in what is quoted stands for anything."""
    name = v.path.split("/")[1] if "/" in v.path else ""
    value = " ".join(str(v.part if v.part is not None else v.value).casefold().split())
    names = [w for w in name_words(name) if len(w) > 3]
    patterns = [rf"{between}(?:{_QUOTE})((?:(?!{_QUOTE})[^\n]){{1,120}}?)(?:{_QUOTE})"]
    if _credential(v):
        names += _CREDENTIAL_NAMES  # and a credential is never likened: "set it as 'X'" gives it
        said = _SAID_AS.replace("|be|", r"|be|as|with|,\s*now|")
        patterns = [p.replace(_SAID_AS, said) for p in patterns]
        patterns.append(rf"\s+{_BARE}")
    quoted = [
        q
        for word in dict.fromkeys(names)
        for pattern in patterns
        for m in re.finditer(rf"\b{re.escape(word)}s?\b{pattern}", turn, re.I)
        if not _NOT_THIS.search(turn, max(0, m.start() - 24), m.start())
        for q in ([m.group(1)] if pattern is patterns[0] else _bare(m.group(1)))
    ]
    for q in quoted:
        if _fills(re.split(r"\{[^{}]*\}", " ".join(q.casefold().split())), value):
            return None  # the person's value, filled in
    return quoted[0] if quoted else None


def _bare(word: str) -> list[str]:
    """An unquoted word given as a credential's value, without the sentence's end after it
    ("1j1l-2k3j." gives "1j1l-2k3j"), where it holds a digit or a sign; else none."""
    word = word.rstrip(".,;!?)") if len(word) > 1 else word
    return [word] if word and _SIGNED.search(word) else []


_SIGNED = re.compile(r"[\d@#$%&*!_-]")


def _fills(parts: list[str], value: str) -> bool:
    """Whether ``value`` is the literal ``parts`` in order with anything between them (a
    template's ``{hotel_name}``): found left to right, in linear time."""
    if len(parts) == 1:
        return value == parts[0]
    if not (value.startswith(parts[0]) and value.endswith(parts[-1])):
        return False
    at, end = len(parts[0]), len(value) - len(parts[-1])
    for p in parts[1:-1]:
        at = value.find(p, at, end)
        if at < 0:
            return False
        at += len(p)
    return at <= end
