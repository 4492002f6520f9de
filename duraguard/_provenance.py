"""Where the values of a session came from: the person's words, a tool's result, outside content.

Pure and deterministic (it runs inside workflow code). The ledger notes every text it sees under
a source, and a check of a new call asks where each of the call's own values was seen before
(:meth:`duraguard._sources.Sources.lookup`). Sources are named:

- ``prompt`` and ``turn:<i>``: the person's words (the task they gave, their turn ``i``);
- ``result:<j>``: the result of call ``j``, a tool whose results carry no label (trusted);
- ``outside:<labels>:<j>[:flags]``: the result of call ``j`` whose tool labels its results as
  outside content (``web``, ``email``; several joined by ``+``). Prose and short field values
  are kept apart: flag ``field`` marks values that stood alone in a field (a sender, a name);
  ``instructs`` marks content whose prose addresses an AI agent or a system (injection
  markers); on prose, ``multi-<kind>`` marks several destinations of one kind (two IBANs) and
  ``fields-<kind>`` one of a kind its fields also hold (an address in an email's body);
- ``outside:evicted``: outside content dropped from the index for size, kept in a Bloom filter.

Every value is indexed, not only value-like words: the whole of a short value, each word, each
pair of adjacent words (so a hotel or a person's name is found inside prose), numbers in words,
dates, and destinations (emails, URLs, hosts, IBANs, phones, handles), also where spelt out in
other words (``ana [at] evil [dot] com``). A result never vouches for the values its own call
put in: a field that only echoes one of the call's arguments is not noted.

The index stays under :data:`MAX_INDEX_BYTES` serialised however much the tools return.
Eviction only ever makes answers stricter: trusted results go first (their values lose their
grounding), then older turns, then outside content, whose tokens move into a Bloom filter that
never forgets a taint (a false positive only makes a value look like outside content).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from typing import Any

from ._dates import dates_in
from ._destinations import Destination, deobfuscate, destination_of, destinations_in, host_of
from ._reading import read

MAX_INDEX_BYTES = 256 * 1024
"""The most the provenance index takes serialised (JSON), Bloom filter included."""
BLOOM_BYTES = 32 * 1024
"""The Bloom filter of evicted outside tokens (raw; about 44 KB as base64)."""
BLOOM_HASHES = 4
MAX_TOKENS_PER_SOURCE = 4096
"""Tokens kept per source; an outside source's overflow goes straight into the Bloom filter."""
MAX_SOURCES_SHOWN = 8
"""Sources a view names per value (the person's first, then outside, then trusted)."""
PROSE_WORDS = 5
"""A text of this many words or more is prose; shorter ones are field values."""
MAX_PARTS_SHOWN = 6
"""Destinations or parts a view names per value."""
EVICTED = "outside:evicted"

_WORDS = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"[^\W_][\w@.:/+-]*")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}")
_TO_AGENT = (
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:instructions?|previous|prior|above|rules|guidelines)\b"
    r"|\b(?:ai|llm|gpt|chatgpt|claude|gemini|chatbot|language model)\b"
    r"|\b(?:dear|attention|hey|hello|hi|note to(?: the)?|message for(?: the)?)\s+(?:agent|assistant|bot)\b"
    r"|\b(?:the|an?|you)\s+(?:assistant|agent)\s+(?:should|must|will|needs?|has to|is)\b|\bassistants?\s*[:,]"
    r"|<\s*/?\s*(?:information|instructions?|system|important)\s*>|\[\s*(?:system|admin|instructions?)\s*\]"
    r"|\bthis is (?:an? )?(?:order|instruction|directive)\b"
)
_TO_AGENT_RE = re.compile(_TO_AGENT, re.I)
"""Prose that addresses an AI agent or a system by name, or wraps orders for one."""
_INSTRUCTS = re.compile(
    _TO_AGENT
    + r"|\b(?:system|admin|administrator|security|compliance|it)\s+(?:notice|message|alert|update|instruction|override|request|team)\b"
    r"|\b(?:new|updated|additional|important|hidden)\s+(?:task|instructions?)\b"
    r"|\bbefore\s+(?:you|completing|continuing|finishing|proceeding|answering|doing)\b"
    r"|\b(?:do not|don't|never)\s+(?:tell|inform|mention|notify|show|ask)\b"
    r"|\b(?:you must|you are required|you have to|you need to|make sure (?:to|you))\b"
    r"|\bimportant!|\burgent\b|\bimmediately\b",
    re.I,
)
"""Injection markers: :data:`_TO_AGENT`, and the pressure an order puts on whoever reads it
(a system notice, urgency, "you must", "do not tell")."""


def _num(x: float) -> str:
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        return str(f)
    return str(int(f)) if f.is_integer() else repr(round(f, 6))


def _maybe_num(t: str) -> str | None:
    if not t or not (t[0].isdigit() or t[0] in "-."):
        return None
    try:
        return _num(float(t.replace(",", "")))
    except (ValueError, OverflowError):
        return None


def _plain(text: str) -> str:
    """Lower case, NFKC, invisible characters dropped, runs of white space made one space."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.casefold().split())


def leaves(value: Any, path: str = "#", *, keys: bool = False) -> list[tuple[str, Any]]:
    """``(JSON Pointer, scalar)`` for every scalar of a JSON value, depth first (with ``keys``,
    object keys too: a result can carry a value in a key)."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return [(path, value)]
    if t is dict or isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for k, v in value.items():
            p = f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}"
            if keys:
                out.append((p, str(k)))
            out.extend(leaves(v, p, keys=keys))
        return out
    if t is list or t is tuple or isinstance(value, list | tuple):
        out = []
        for i, v in enumerate(value):
            out.extend(leaves(v, f"{path}/{i}", keys=keys))
        return out
    return [(path, value)]


def _destination_keys(kind: str, value: str) -> set[str]:
    keys = {value}
    if kind == "url":
        keys.add(host_of(value))
    elif kind == "email":
        keys.add(value.rsplit("@", 1)[-1])
    return keys


_OBFUSCATED = re.compile(
    r"[\[\(\{<]\s*(?:at|dot|@|\.)\s*[\]\)\}>]|\s(?:at|dot|AT|DOT)\s|hxxp", re.I
)
_TYPED = re.compile(r"\d|\b(?:" + "|".join(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
     "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twenty",
     "thirty", "forty", "fifty", "hundred", "thousand")
) + r")", re.I)  # fmt: skip


def _destinations(text: str) -> list[Destination]:
    """The destinations in ``text``, also where spelt out in other words."""
    found = destinations_in(text[:20000])
    if _OBFUSCATED.search(text):
        spelt = deobfuscate(text[:20000])
        if spelt:
            found += [d for d in destinations_in(spelt) if d not in found]
    return found


def text_keys(
    text: str, *, whole: bool = True, dests: list[Destination] | None = None, typed: bool = True
) -> set[str]:
    """Every form a value in ``text`` is found under: the whole (short) text, each word, each pair
    of adjacent words, compound tokens (ids, file names), numbers, dates and destinations
    (``dests`` where already read; ``typed=False`` where the caller reads dates and numbers in
    words for many texts at once)."""
    plain = _plain(text[:20000])
    out: set[str] = set()
    if whole and len(plain) <= 200:
        out.add(plain)
        out.add(plain.lstrip("#@").rstrip("/"))
        n = _maybe_num(plain.lstrip("$€£¥"))
        if n is not None:
            out.add(n)
        if _ISO.match(plain):
            out.update((plain[:10], "--" + plain[5:10]))
    words = _WORDS.findall(plain)
    out.update(words)
    out.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    for t in _TOKEN.findall(plain):
        t = t.rstrip(".:/-")
        out.add(t)
        if t[:1].isdigit() or t[:1] in "-.":
            n = _maybe_num(t)
            if n is not None:
                out.add(n)
    for kind, value in dests if dests is not None else _destinations(text):
        out.update(_destination_keys(kind, value))
    if typed and len(words) > 1 and _TYPED.search(text):
        out.update(read(text).all())
    return out


def _typed(texts: list[str]) -> set[str]:
    """The dates of many texts (tool results), in the forms a person's words are read in."""
    out: set[str] = set()
    for t in texts:
        out |= dates_in(t[:20000])
    return out


def said(text: str) -> set[str]:
    """The typed values a person's text holds (amounts in words, dates, ids), normalised."""
    return read(text).all()


def value_keys(leaf: Any) -> set[str]:
    """The forms one of a call's values is looked up under (whole value, number, date,
    destination); its words and word pairs are looked up by :meth:`Sources.lookup`."""
    t = type(leaf)
    if t is int or t is float or (t is not str and t is not bool and isinstance(leaf, int | float)):
        return {_num(leaf)}
    text = _plain(str(leaf))
    if not text:
        return set()
    keys: set[str] = set()
    if len(text) <= 200:
        keys.update((text, text.lstrip("#@").rstrip("/")))
        n = _maybe_num(text.lstrip("$€£¥"))
        if n is not None:
            keys.add(n)
        if _ISO.match(text):
            keys.update((text[:10], "--" + text[5:10]))
    dest = destination_of(str(leaf))
    if dest is not None:
        keys.add(dest[1])
    return keys


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,40}")


def _scalars(value: Any) -> list[Any]:
    """Every scalar of a result, and every object key that could be a value (a hotel's name,
    an address): keys that name a field (``snippet``, ``sender_id``) are left out."""
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)  # JSON's own types first: isinstance is slow in sandboxed workflow code
        if t is str or t is int or t is float or t is bool or v is None:
            out.append(v)
        elif t is dict or isinstance(v, dict):
            for k, x in v.items():
                if not _IDENTIFIER.fullmatch(str(k)):
                    out.append(str(k))
                stack.append(x)
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _prose(text: str) -> bool:
    return len(text.split(None, PROSE_WORDS)) > PROSE_WORDS - 1


# -- values too small to trace by their text alone (a provenance rule of their own) ----------
_ROLE_SKIP = frozenset(
    {"the", "of", "to", "for", "in", "on", "by", "new", "my", "all", "get", "list", "search",
     "read", "find", "fetch", "show", "query", "lookup", "look"}
)  # fmt: skip
_DIGITS = re.compile(r"-?\d{1,4}(?:\.\d{1,2})?")
_COMMON = re.compile(r"[a-z]{4,10}")


def role_words(name: str) -> frozenset[str]:
    """What an argument's or a field's name says it holds: ``file_id`` -> ``file``, ``id``;
    ``hotel_names`` -> ``hotel``, ``name``; ``id_`` -> ``id``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    out = set()
    for w in re.findall(r"[a-z]+", spaced.lower()):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if len(w) >= 2 and w not in _ROLE_SKIP:
            out.add(w)
    return frozenset(out)


def tiny(leaf: Any) -> tuple[str, str] | None:
    """``(kind, form)`` of a value too small to trace by its text alone, else ``None``: a
    number of at most four digits (``num``: ``13``, ``2200``, ``4.5``), any text of at most
    three characters (``short``: ``Bob``, ``A1``) or one common lower-case word (``word``:
    ``general``, ``notes``). Such a text turns up everywhere; where it was introduced, and as
    what, says more than where it was seen."""
    t = type(leaf)
    if t is bool or leaf is None:
        return None
    if t is int or t is float:
        form = _num(leaf)
        return ("num", form) if _DIGITS.fullmatch(form) else None
    raw = str(leaf).strip()
    text = _plain(raw)
    if not text:
        return None
    if _DIGITS.fullmatch(text):
        n = _maybe_num(text)
        return ("num", n) if n is not None else None
    if len(text) <= 3:
        return ("short", text.lstrip("#@"))
    if _COMMON.fullmatch(raw):
        return ("word", text)
    return None


_ID_WORDS = frozenset({"id", "key", "ref", "no", "number", "uid", "uuid", "index"})
"""Field names that say only "which one": the tool's own nouns say of what (``list_files``'s
``id`` is a file's)."""


def tiny_keys(kind: str, form: str, roles: frozenset[str]) -> set[str]:
    """What a tiny value is looked up under at an argument whose name says ``roles``: the person
    said it as a value (``said:13``) or beside the argument's name (``file 13``); a result
    introduced it in a field of that name (``file=13`` for ``file_id``: the id of a file, not
    of an event) or, for a word, as a whole field."""
    keys = {f"{w}={form}" for w in (roles - _ID_WORDS or roles)}
    if kind == "num":
        keys.add(f"said:{form}")
        keys.update(f"{w} {form}" for w in roles)
        keys.update(f"{form} {w}" for w in roles)
    else:
        keys.add(f"={form}")
    return keys


def keyed(value: Any, tool: str) -> set[str]:
    """The tiny values of a result under the name of the field that holds them (``amount=50``;
    an ``id`` also under the tool's nouns, ``file=13`` for ``list_files``; list items under the
    tool's nouns, ``channel=general`` for ``list_channels``), and a word that is a field's
    whole value (``=general``)."""
    out: set[str] = set()
    stack: list[tuple[Any, frozenset[str]]] = [(value, role_words(tool))]
    while stack:
        v, roles = stack.pop()
        t = type(v)
        if t is dict or isinstance(v, dict):
            for k, x in v.items():
                named = role_words(str(k))
                stack.append((x, named | roles if named <= _ID_WORDS else named))
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend((x, roles) for x in v)
        else:
            found = tiny(v)
            if found is not None:
                kind, form = found
                out.update(f"{w}={form}" for w in roles)
                if kind != "num":
                    out.add(f"={form}")
    return out
