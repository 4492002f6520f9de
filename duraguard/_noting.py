"""What each text a session sees is noted under in the provenance index, per source.

Pure and deterministic (it runs inside workflow code). The person's words are noted with the
typed values they state; a trusted result with the tiny values it introduces under the names
of their fields, never with the values its own call put in; outside content (a labelled
result, or a result whose call was given values from outside content) apart as prose and
fields, with the flags the policy reads (see :mod:`duraguard._provenance`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from ._acted import acted_keys
from ._adjacent import beside_marks, texts_in_order
from ._destinations import destination_of
from ._drawn import HIDDEN, LOOKALIKES, PARENTHESIZED, tag_readings
from ._encoded import Budget, as_read, noisy, quiet, read_through
from ._markers import (
    _BRACKETED,
    _INSTRUCTS,
    _TO_AGENT_RE,
    _TOKENS,
    TO_AGENT_ANCHORS,
    addresses_agent,
    folded_plain,
)
from ._marks import cut_mark_runs
from ._near import noted_parts
from ._orders import (
    LINE_GATES,
    MORE_LATIN_GATE,
    ORDER_GATES,
    Gate,
    latin_ordered,
    script_ordered,
)
from ._orders import in_windows as _marked
from ._orders_english import drops_in_other_words
from ._provenance import (
    MAX_TOKENS_PER_SOURCE,
    _destination_keys,
    _destinations,
    _plain,
    _prose,
    _scalars,
    _typed,
    leaves,
    text_keys,
    value_keys,
)
from ._tiny import keyed, tiny


def person_keys(value: Any, said: set[str] | None) -> set[str]:
    """The person's words (``prompt``, ``turn:i``): every form, and the tiny values they state as
    values (``said:13``; "June 13" states a date, not 13)."""
    keys = set(said or ())
    keys.update(f"said:{s}" for s in said or () if (t := tiny(s)) is not None and t[0] == "num")
    for _, leaf in leaves(value, keys=True):
        if isinstance(leaf, str):
            keys |= text_keys(leaf) | (acted_keys(leaf) if said is not None else set())
        elif not isinstance(leaf, bool) and leaf is not None:
            keys |= value_keys(leaf)
    return keys


def echoes(args: Any) -> set[str]:
    """A call's own argument values, as its result could hand them back."""
    return {_plain(str(v)) for _, v in leaves(args or {})}


def _sent(args: Any) -> set[str]:
    """The destinations (every key they are looked up under) in a call's arguments."""
    out: set[str] = set()
    for _, v in leaves(args or {}):
        if type(v) is str or isinstance(v, str):
            for kind, value in _destinations(v):
                out |= _destination_keys(kind, value)
    return out


ENOUGH_TRUSTED_KEYS = 2 * MAX_TOKENS_PER_SOURCE
"""Keys read from one trusted result before the rest of it is left unread (its source keeps
MAX_TOKENS_PER_SOURCE of them): its values past that lose their grounding, which only makes a
later call that uses them look less vouched for. Outside content is read whole (it taints)."""


def trusted_keys(value: Any, args: Any, tool: str, day: str = "") -> set[str]:
    """A trusted result: every form of its values but those its own call put in, and its tiny
    values under their fields' names (:func:`duraguard._tiny.keyed`)."""
    echo = echoes(args)
    keys: set[str] = set()
    texts: list[str] = []
    for leaf in _scalars(value):
        if len(keys) >= ENOUGH_TRUSTED_KEYS:
            # A trusted source keeps MAX_TOKENS_PER_SOURCE tokens at most: reading thousands of
            # rows more costs the workflow task that notes them (a third of a second for 14,000)
            # and could only ground values, never taint one.
            break
        t = type(leaf)  # not isinstance: slow in sandboxed workflow code
        if t is bool or leaf is None or _plain(str(leaf)) in echo:
            continue
        if t is str or (t is not int and t is not float and isinstance(leaf, str)):
            keys.update(text_keys(leaf, typed=False))
            texts.append(leaf)
        else:
            keys.update(value_keys(leaf))
    # A result never vouches for a destination its own call sent (an echo, a "not found"
    # for it): where that came from, the call's arguments had it first.
    return (keys | _typed(texts, day) | keyed(value, tool)) - _sent(args)


def outside_notes(
    value: Any, base: str, echo: set[str], *, inherited: tuple[str, ...] = (), day: str = ""
) -> list[tuple[str, set[str]]]:
    """Outside content as ``(source name, keys)``: its prose under ``base`` with flags, its short
    fields under ``base:field``. ``inherited`` flags (``instructs``, ``to-agent``) are carried
    over from content that reached it (a result given values from prose that instructs);
    ``day`` (ISO) is when it came, to read "Saturday 18th" by."""
    prose: set[str] = set()
    fields: set[str] = set()
    in_prose: dict[str, set[str]] = {}
    in_fields: set[str] = set()
    prose_texts: list[str] = []
    field_texts: list[str] = []
    for leaf in _scalars(value):
        t = type(leaf)  # not isinstance: slow in sandboxed workflow code
        if t is bool or leaf is None:
            continue
        text = str(leaf)
        if _plain(text) in echo:
            continue  # the call's own argument, handed back: not content from outside
        is_str = t is str or (t is not int and t is not float and isinstance(leaf, str))
        if is_str and _prose(text):
            found = _destinations(text)
            prose |= text_keys(text, whole=len(text) <= 200, dests=found, typed=False)
            prose_texts.append(text)
            for kind, where in found:
                in_prose.setdefault(kind, set()).add(where)
        elif is_str:
            fields |= text_keys(text, typed=False)
            field_texts.append(text)
            dest = destination_of(text)
            if dest is not None:
                in_fields.add(dest[0])
        else:
            fields |= value_keys(leaf)
    prose |= _typed(prose_texts, day)
    budget = Budget()  # what is decoded of this value
    prose_reads = [read_through(t, budget) for t in prose_texts]
    per_text = [tuple(r for u in x.all() for r in marker_readings(u)) for x in prose_reads]
    read = [r for rs in per_text for r in rs]
    # A short field is not prose, but the words that address an agent mark it too ({"subject":
    # "Ignore all previous instructions."}); the pressure words alone ("urgent") do not.
    per_field = [
        tuple(r for u in as_read(t, budget) for r in marker_readings(u)) for t in field_texts
    ]
    read_fields = [r for rs in per_field for r in rs]
    instructs = "instructs" in inherited or any(_INSTRUCTS.search(t) for t in read)
    if instructs and "instructs" not in inherited and any(noisy(x.text) for x in prose_reads):
        pressed = [r for x in prose_reads for u in x.all() for r in marker_readings(quiet(u))]
        instructs = any(_INSTRUCTS.search(t) for t in pressed)  # not read in noise (quieted)
    to_agent = (
        "to-agent" in inherited
        or any(addresses_agent(t) for t in read)
        or any(addresses_agent(t) for t in read_fields)
    )
    if not to_agent:
        # An order cut over two texts reads as one to the model, which reads them side by side.
        to_agent = bool(beside_marks(value, marker_readings, lambda t: _plain(t) in echo))
    fields |= _typed(field_texts, day)
    flags = (["instructs"] if instructs or to_agent else []) + (["to-agent"] if to_agent else [])
    more = [f"multi-{k}" for k, vs in sorted(in_prose.items()) if len(vs) > 1]
    more += [f"fields-{k}" for k in sorted(in_fields) if k in in_prose]
    return noted_parts(
        (":".join([base, *flags, *more]), prose, prose_texts, per_text),
        (":".join([base, "field", *flags]), fields, field_texts, per_field),
        day,
    )


_BRACKETS = re.compile(_BRACKETED, re.I)
_BRACKET_WORDS = ("information", "instruction", "system", "important", "admin")
"""The words of the bracketed forms (``<INFORMATION>``, ``[SYSTEM]``)."""
_TOKEN_RE = re.compile(_TOKENS, re.I)
_TOKEN_MARKS = (
    "<|", "[inst", "[/inst", "[ inst", "[ /inst", "[/ inst", "[system_prompt", "[/system_prompt",
    "[tool_calls", "[available_tools", "<<sys", "<</sys", "start_of_turn", "end_of_turn",
    "system_prompt", "system-prompt", "system prompt",
)  # fmt: skip
"""What starts, or lies near the start of, every chat-template token (``<|eot_id|>``, ``[INST]``,
``<<SYS>>``): marks and rare words, so a page of "system" and "install" is not read one find at
a time."""
_INSTRUCTS_ANCHORS = (
    *TO_AGENT_ANCHORS,
    *(
        f"{a} {b}"
        for a in ("system", "admin", "administrator", "security", "compliance")
        for b in ("notice", "message", "alert", "update", "instruction", "override", "request", "team")
    ),
    *(
        f"{a} {b}"
        for a in ("new", "updated", "additional", "important", "hidden")
        for b in ("task", "instruction")
    ),
    *(f"it {b}" for b in ("notice", "message", "alert", "update", "instruction", "override", "request", "team")),
    *(
        f"before {b}"
        for b in ("you", "completing", "continuing", "finishing", "proceeding", "answering", "doing")
    ),
    *(
        f"{a} {b}"
        for a in ("do not", "never", *(f"don{q}t" for q in "'\u2019\u02bc`"))
        for b in ("tell", "inform", "mention", "notify", "show", "ask")
    ),
    "you must", "you are required", "you have to", "you need to", "make sure", "important!",
    "urgent", "immediately",
)  # fmt: skip
"""The same for :data:`~duraguard._markers._INSTRUCTS`. Its forms that start with a common
word ("IT notice", "before you", "do not tell") are anchored on both their words, so a page full
of "it" and "before" is not read one find at a time."""
_REACH = (24, 80)
"""How far a match may start before its anchor word and end after it (whitespace collapsed)."""


def marker_readings(text: str) -> tuple[str, ...]:
    """``text`` as the injection markers are looked for in it: as it is, and where it holds
    anything but ASCII also folded (NFKD: fullwidth and styled letters plain; what renders as
    nothing and marks dropped; Cyrillic and Greek look-alikes read as the Latin letters they
    are drawn as); and with words written a letter at a time (``I g n o r e  p r e v i o u s``)
    read as words. Linear, at C speed."""
    readings = [text, *tag_readings(text)]
    for r in readings[:2]:  # as drawn, and with the tags read where they stand
        if r.isascii():
            continue
        plain = unicodedata.normalize("NFKD", cut_mark_runs(r).translate(PARENTHESIZED))
        plain = HIDDEN.sub("", plain).translate(LOOKALIKES)
        if plain != r:
            readings.append(plain)
    readings += [_SPACED.sub(_unspaced, r) for r in readings if _SPACED.search(r)]
    readings += [p for r in readings if (p := plain_words(r)) != r]
    readings += [r.replace("_", " ") for r in readings if "_" in r]  # snake_case words
    return tuple(readings)


_DIGIT = re.compile(r"[0-9]")
_INWORD_MARKUP = re.compile(
    r"(?<=[^\W_])(?:<[^<>\n]{0,64}>|\*{1,3}|~~|`|-[ \t]*\n\s*)+(?=[^\W_])"
    r"|(?<=[^\W\d_])[-_](?=[^\W\d_])"
)
"""Markup, a line break, a hyphen or an underscore inside a word (``Ig<b>nore</b>``,
``Ig**nore**``, ``ign-`` at a line's end, ``Ig-nore``, ``in_structions``): a page's tags and a
writer's emphasis, which a model reads through."""
_SYMBOL_LEET = re.compile(r"(?<![!|$@])[!|$@]++(?=[^\W\d_])|(?<=[^\W\d_])[|$]+")
"""Symbols drawn for letters before a letter (``!gnore``, ``prev!ous``, ``@ll``, ``d!$regard``)
or ending a word (``a||``, ``rule$``); a run is tried once, from its start (linear)."""
_SYMBOLS = str.maketrans("!|$@", "ilsa")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")
"""Where words written together start again (``IgnorePreviousInstructions``)."""
_LEET_WORD = re.compile(r"\b(?=[0-9]*[^\W\d_])(?=[^\W_]*[0-9])[^\W_]+\b")
"""A word of letters and digits both (``1gn0re``, ``prev10us``)."""
_LEET = str.maketrans("0134578", "oieastb")


def plain_words(text: str) -> str:
    """``text`` with markup inside its words dropped and the digits of words written in both
    letters and digits read as the letters they stand for (``1gn0re prev10us`` is "ignore
    previous"). Linear, at C speed."""
    if any(c in text for c in "<*~`-_"):
        text = _INWORD_MARKUP.sub("", text)
    if any(c in text for c in "!|$@"):
        text = _SYMBOL_LEET.sub(lambda m: m.group().translate(_SYMBOLS), text)
    if _CAMEL.search(text):
        text = _CAMEL.sub(" ", text)
    return _LEET_WORD.sub(_leet, text) if _DIGIT.search(text) else text


def _leet(m: re.Match[str]) -> str:
    return m.group().translate(_LEET)


_SYLLABIC = "\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
"""Scripts from Devanagari to Sinhala, Thai, Lao, Myanmar, Khmer: their vowel signs are marks, not
letters, so a word's letter before or after one is not a letter standing alone."""
_SPACED = re.compile(
    rf"(?<![^\W_])(?<![{_SYLLABIC}])[^\W\d_](?P<s>[ .\-_*])[^\W\d_](?:(?P=s)[^\W\d_])*"
    rf"(?![^\W_])(?![{_SYLLABIC}])"
)
"""A word written a letter at a time, one separator between its letters (``I g n o r e``,
``I.g.n.o.r.e``, ``A.I.``); its words are told apart by anything else (two spaces, a comma)."""


def _unspaced(m: re.Match[str]) -> str:
    return m.group()[::2]


def marks_of_rest(value: Any) -> tuple[str, ...]:
    """The flags (``instructs``, ``to-agent``) that outside content read only in part carries,
    all of it read. Its texts are read as the patterns see them: compatibility forms and case
    folded, accents and every run of whitespace (control characters, no-break spaces) made one
    space; the words a match starts with are found at C speed, and the patterns run only from
    there, on at most :data:`MAX_REST_SCANNED` characters (about a second a megabyte). Where
    that is not enough to decide, the content is flagged. Its texts are read as written, each
    apart, and again side by side for an order cut over two (:func:`beside_marks`)."""
    texts = texts_in_order(value)
    budget = Budget()  # what is decoded of this value
    reads = [read_through(t, budget) for t in texts]
    if budget.spent:
        return _BOTH  # more encoded in it than is decoded: fails closed
    found = _marks_of_texts(
        [r for x in reads for r in x.all()], lambda: any(noisy(x.text) for x in reads)
    )
    if found == _BOTH:
        return found
    # and side by side, as written and keys sorted (duraguard._adjacent), read as drawn
    return beside_marks(value, lambda t: (t,), texts=texts, tight_readings=marker_readings) or found


_BOTH = ("instructs", "to-agent")


def _marks_of_texts(texts: list[str], noise: Callable[[], bool]) -> tuple[str, ...]:
    """The flags ``texts`` (read joined, line by line) carry: ``noise()``, whether any of them is
    noise whose letters make words by chance, is asked only where it matters."""
    folds, raw = _rest_readings(texts)
    lows = _lows(raw)
    if any(script_ordered(low, gates) for low, gates in folds):
        return _BOTH  # an order in a script other than Latin
    for anchors, pattern, reach in (
        (_BRACKET_WORDS, _BRACKETS, (6, 6)),
        (_TOKEN_MARKS, _TOKEN_RE, (8, 40)),
        (TO_AGENT_ANCHORS, _TO_AGENT_RE, _REACH),
    ):
        if any(_marked(low, anchors, pattern, reach) is not False for low in lows):
            return _BOTH
    # The orders in more Latin-script languages: in the rest as drawn (not split at capitals or
    # underscores), and only where one of their shorter words is.
    if any(w in lows[0] for w in MORE_LATIN_GATE) and latin_ordered(lows[0]):
        return _BOTH
    # In other words, misspelt (duraguard._orders_english): as drawn, in its case (a capital
    # starts a clause run on from junk).
    if drops_in_other_words(raw) is not False:
        return _BOTH
    found = any(_marked(low, _INSTRUCTS_ANCHORS, _INSTRUCTS, _REACH) is not False for low in lows)
    if found and noise():
        # Read in noise? Its runs made spaces (duraguard._encoded.quiet: an image or a key as
        # drawn, whose letters make "Ai" and "+ai/" by chance), the rest is read again.
        lows = _lows(quiet(raw))
        found = any(_marked(x, _INSTRUCTS_ANCHORS, _INSTRUCTS, _REACH) is not False for x in lows)
    return ("instructs",) if found else ()


def _lows(raw: str) -> list[str]:
    """The rest as drawn, with words written a letter at a time joined (``raw``), read as the
    patterns read it: in plain words and with snake_case words apart too, case folded, every
    run of whitespace one space."""
    plain = plain_words(raw)
    read = [raw] + [t for t in (plain, raw.replace("_", " ")) if t != raw]  # snake_case too
    return [" ".join(t.casefold().split()) for t in read]


_APART = "\n|\n"  # between texts joined: no pattern reads through it ("To" beside "AI Team")
_LINE_BREAK = re.compile(r"\s*\n\s*")
_BLANK_RUN = re.compile(r"[^\S\n]+")


def _rest_readings(texts: list[str]) -> tuple[list[tuple[str, tuple[Gate, ...]]], str]:
    """The rest's texts, as a model reads them (:func:`duraguard._encoded.read_through`),
    joined: folded as the orders in scripts other than Latin are read, as drawn and with words
    written a letter at a time joined (``ت ج ا ه ل``), each with the scripts to search it for;
    and as drawn with those words joined (:func:`_lows` reads it)."""
    texts = [*texts, *(h for t in texts for h in tag_readings(t))]
    seen = cut_mark_runs(_APART.join(texts)).translate(PARENTHESIZED)
    seen = HIDDEN.sub("", unicodedata.normalize("NFKD", seen))
    raw, joins = _SPACED.subn(_unspaced, seen.translate(LOOKALIKES))
    # seen is NFKD, hidden dropped: not again
    joined = [seen, _SPACED.sub(_unspaced, seen)] if joins else [seen]
    folds = [folded_plain(t) for t in joined]
    # Lines joined (an order wrapped over them), and kept where a script has orders that count
    # only where a sentence or a line starts (Hebrew and Greek forms the past shares), as the
    # whole is read.
    kept = [
        (_BLANK_RUN.sub(" ", _LINE_BREAK.sub("\n", f)), LINE_GATES)
        for f in folds
        if any(letters.search(f) for _, letters, _, _ in LINE_GATES)
    ]
    return [(" ".join(f.split()), ORDER_GATES) for f in folds] + kept, raw
