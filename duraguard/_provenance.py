"""Where the values of a session came from: the person's words, a tool's result, outside content.

Pure and deterministic (it runs inside workflow code). The ledger notes every text it sees under
a source, and a check of a new call asks where each of the call's own values was seen before
(:meth:`duraguard._sources.Sources.lookup`). Sources are named:

- ``prompt`` and ``turn:<i>``: the person's words (the task they gave, their turn ``i``);
- ``result:<j>``: the result of call ``j``, a tool whose results carry no label (trusted);
- ``outside:<labels>:<j>[:flags]``: the result of call ``j`` whose tool labels its results as
  outside content (``web``, ``email``; several joined by ``+``). Prose and short field values
  are kept apart: flag ``field`` marks values that stood alone in a field (a sender, a name);
  ``instructs`` marks content whose prose carries injection markers, ``to-agent`` prose that
  addresses an AI agent or a system; on prose, ``multi-<kind>`` marks several destinations of
  one kind (two IBANs) and ``fields-<kind>`` one of a kind its fields also hold (an address in
  an email's body);
- ``outside:<labels>:<j>:via[:from-prose][:flags]``: the result of call ``j``, a trusted tool
  given values from outside content (or values nobody gave once outside content had entered):
  provenance follows data through calls (:mod:`duraguard._sources`);
- ``outside:evicted``: outside content dropped from the index for size, kept in a Bloom filter;
- ``outside:unread``: a value nobody gave, where outside content was read only in part
  (:func:`clipped`): its unread rest may hold it.

Every value is indexed, not only value-like words: the whole of a short value, each word, each
pair of adjacent words (so a hotel or a person's name is found inside prose), numbers in words,
dates, and destinations (emails, URLs, hosts, IBANs, phones, handles), also where spelt out in
other words (``ana [at] evil [dot] com``). A result never vouches for the values its own call
put in: a field that only echoes one of the call's arguments is not noted. Values too small to
trace by their text have a rule of their own (:mod:`duraguard._tiny`).

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

from ._dates import dates_in, weekday_dates
from ._destinations import (
    Destination,
    canonical_iban,
    deobfuscate,
    destination_of,
    destinations_in,
    host_of,
)
from ._marks import cut_mark_runs
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
UNREAD = "outside:unread"
"""Shown for a value the index cannot place once outside content was read only in part."""
MAX_LEAVES_NOTED = 1024
"""Scalars (object keys included) of one noted value read into the index; see :func:`clipped`."""
MAX_TEXT_NOTED = 128 * 1024
"""Characters of one noted value read into the index; see :func:`clipped`."""
_READ_OF_A_TEXT = 20000
"""Characters of one text that its keys are read from (:func:`text_keys`)."""

_WORDS = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"[^\W_][\w@.:/+-]*")
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


def _num(x: float) -> str:
    try:
        f = float(x)
    except OverflowError:
        # An integer past the largest float (JSON has no bound): its own digits, where rounding
        # it would make it "inf", the key of every other such number.
        return str(x)
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
        text = unicodedata.normalize("NFKC", cut_mark_runs(text))
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
    found = destinations_in(text[:_READ_OF_A_TEXT])
    if _OBFUSCATED.search(text):
        spelt = deobfuscate(text[:_READ_OF_A_TEXT])
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
    plain = _plain(text[:_READ_OF_A_TEXT])
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


def _typed(texts: list[str], day: str = "") -> set[str]:
    """The dates of many texts (tool results), in the forms a person's words are read in; with
    ``day`` (ISO, when the result came), also those named by a weekday and a day of the month
    ("Saturday 18th")."""
    out: set[str] = set()
    for t in texts:
        out |= dates_in(t[:20000])
        if day:
            out |= weekday_dates(t[:20000], day)
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


FIELD_NAME = re.compile(r"[a-z_][a-z0-9_]{0,40}")
"""An object key that names a field (``snippet``, ``sender_id``), not a value."""


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
                if not FIELD_NAME.fullmatch(str(k)):
                    out.append(str(k))
                stack.append(x)
        elif t is list or t is tuple or isinstance(v, list | tuple):
            stack.extend(v)
        else:
            out.append(v)
    return out


def clipped(value: Any) -> tuple[Any, bool]:
    """``(the part of value that is noted, whether that is all of it)``: its first
    :data:`MAX_LEAVES_NOTED` scalars and keys, in order, holding at most :data:`MAX_TEXT_NOTED`
    characters, a text counting for as much of it as is read (:data:`_READ_OF_A_TEXT`). A text
    is kept whole or not at all: a cut one could vouch for its own prefix.

    Noting runs in workflow code, where a task over the SDK's deadlock limit (2 s) fails and is
    retried with the same work: reading a result of 14,000 rows whole took a third of a second
    on a quiet machine and past the limit under load, on every try. What is left unread grounds
    nothing (a trusted result's values past the bound look vouched by nobody); outside content
    read in part marks the index (``SourceIndex.unread``), and every value it cannot place is
    then shown as :data:`UNREAD` (a destination is refused, another value asked). A container
    counts as one item (a result of a million empty lists is read in part too), and a text
    longer than its keys are read from is read in part (its prefix is noted)."""
    room = [MAX_LEAVES_NOTED, MAX_TEXT_NOTED]
    whole = [True]
    dropped = object()

    def fits(v: Any) -> bool:
        size = min(len(v), _READ_OF_A_TEXT) if isinstance(v, str) else 1
        if room[0] <= 0 or size > room[1]:
            whole[0] = False
            return False
        room[0] -= 1
        room[1] -= size
        if size == _READ_OF_A_TEXT and len(v) > size:
            whole[0] = False  # its keys are read from its first _READ_OF_A_TEXT characters
        return True

    def take(v: Any) -> Any:
        t = type(v)  # JSON's own types first: isinstance is slow in sandboxed workflow code
        is_dict = t is dict or (t is not str and isinstance(v, dict))
        is_list = t is list or t is tuple or (t is not str and isinstance(v, list | tuple))
        if is_dict or is_list:
            if room[0] <= 0:
                whole[0] = False
                return dropped
            room[0] -= 1
        if is_dict:
            out: dict[Any, Any] = {}
            for k, x in v.items():
                if not fits(str(k)):
                    break
                if (kept := take(x)) is not dropped:
                    out[k] = kept
            return out
        if is_list:
            items: list[Any] = []
            for x in v:
                if room[0] <= 0:
                    whole[0] = False
                    break
                if (kept := take(x)) is not dropped:
                    items.append(kept)
            return items
        return v if fits(v) else dropped

    got = take(value)
    return (None if got is dropped else got), whole[0]


def _prose(text: str) -> bool:
    return len(text.split(None, PROSE_WORDS)) > PROSE_WORDS - 1


# -- parts of a value ----------------------------------------------------------------------
def last_name(path: str) -> str:
    """The name of the argument (or nested field) a JSON Pointer ends at: ``#/to/0`` -> ``to``."""
    for seg in reversed(path.split("/")[1:]):
        if not seg.isdigit():
            return seg.replace("~1", "/").replace("~0", "~")
    return ""


def part_keys(text: str) -> list[tuple[str, ...]]:
    """The keys of the parts of a value nobody gave whole (an address's local part and domain,
    a link's host, an IBAN's halves, the destinations in prose)."""
    return [tuple(_destination_keys(*part)) for part in parts(text)]


def parts(text: str) -> list[tuple[str, str]]:
    """What a value nobody gave as a whole may have been put together from: the destinations in
    prose; an email's local part and domain; a URL's host; an IBAN's halves."""
    dest = destination_of(text)
    if dest is None:
        return list(dict.fromkeys(destinations_in(text[:20000])))
    kind, value = dest
    if kind == "email":
        local, _, domain = value.rpartition("@")
        return [("word", local), ("url", domain)]
    if kind == "url":
        return [("url", host_of(value))]
    if kind == "iban":
        v = canonical_iban(value).lower()
        cuts = range(len(v) - 6, 5, -1)  # the longest first: the first found is named
        return [("word", v[:i]) for i in cuts] + [("word", v[len(v) - i :]) for i in cuts]
    return []
