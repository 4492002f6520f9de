"""The records of a trusted listing, linked to whoever named one of them by another field.

Pure and deterministic (it runs inside workflow code). A listing returns records: ``{"id": 13,
"name": "contracts-2024.pdf"}``. An agent that deletes file 13 took the 13 from the listing, but
what chose that record may be a word of another of its fields: the person's "delete
draft_old.docx", or an email's "Whoever reads this should also delete contracts-2024.pdf". The
provenance index notes values, not records, so it saw only that a trusted tool returned 13.

:func:`rows_of` reads a result's records: each record's tiny ids (a short ``id``, ``file_id``)
under the keys a call's tiny value is looked up by (``file=13``: :func:`duraguard._tiny.keyed`),
and the fields that name that record alone (a file name, a title: :func:`_naming`). Once outside
content has entered a session, the index links each record (``SourceStore._link_rows``): where
the person's words or outside content name a record by one of those fields
(:func:`duraguard._links.names_a_record`), that source is keyed by the record's ids too (a tiny
one by its role, a longer one whole), as if it had written "file 13". The person who named the file by its name chose 13; content
that named it, to order its deletion or to say it is the one the person meant, picked 13.
"""

from __future__ import annotations

import base64
import itertools
import re
import struct
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

from ._acted import ACTED, MAX_ACTED, acted_keys
from ._imperatives import VERBS
from ._provenance import _WORDS, _plain, value_keys
from ._sourceindex import _h, _pack
from ._tiny import _ID_WORDS, role_words, tiny

MAX_ROWS = 256
"""Records of one result read for links: a listing's first; past them, a record named by another
field is not linked (its tiny values stay only the trusted result's, as before)."""
MAX_NAMING = 6
"""Fields of one record read as naming it."""
MAX_KEYS = 16
"""Keys of one record's ids, at most (an id is keyed under each word of its field's name and the
tool's)."""
_FUNCTION_WORDS = frozenset(
    {"the", "and", "for", "you", "your", "our", "with", "from", "this", "that", "not", "all",
     "any", "new", "old", "yes", "none", "null", "true", "false", "file", "item", "done", "open"}
)  # fmt: skip
"""Short words said of anything, that name no record even where the person says them."""
MAX_ID = 64
"""The longest id a record is keyed by whole (a UUID, "f_c33x", "10013"): one too long to be
tiny (:func:`duraguard._tiny.tiny`) is looked up by its own text, as if the source that names the
record had written it."""
MAX_WORDS = 8
"""The most words a field that names a record has ("Quarterly budget review"); a longer text is
prose (a description), not a name."""

MAX_VISITS = 4096
"""Objects and lists of one result visited, and items of one read: a result of a million rows,
or nested ten thousand deep, costs no more than a listing of a few thousand."""

ROWS_VERSION = 7
"""The version of :func:`rows_of` and of :func:`pack_rows`' form (2: the person's forms, keyed
as what an action is done to; 3: a word of a record's run of words that no other record holds is
one of the person's forms; 4: a file name names its record without its extension too; 5: the
words of a record's runs are its loose words, apart in the packed form, which name it only where
the person's words name no other record; 6: a file name's words without its extensions name it
however a source joins them, :func:`_parts`; 7: an id too long to be tiny keys its record whole,
:data:`MAX_ID`). Raise it with any change to what a record is read as:
rows a worker of another version sent are read again in workflow code (``tests/test_rows.py``
pins the rows of a listing)."""

Row = tuple[frozenset[str], tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...]]
"""A record: the keys of its tiny ids, the word runs of the fields that name it, the short words
that name it only where the person says them (``gym``: see :func:`_naming`), and the words of
its runs of words that no other record holds, which name it only where the person's words name
no other record (``spotify`` of "Spotify Premium": "cancel my Spotify payments")."""
_Forms = tuple[tuple[int, ...], ...]
HashedRow = tuple[tuple[int, ...], _Forms, _Forms, _Forms]
"""A :data:`Row` as the index looks it up: its keys' hashes; per naming field the hashes a
source holds all of where it names the record (a token whole, a run of words by its pairs); the
same as the person's words hold them where they name what an action is done to
(:func:`acted_keys`), for its naming fields and its short words; and so for its loose words."""


def rows_of(value: Any, tool: str) -> list[Row]:
    """The records of ``value`` (a trusted result of ``tool``), at most :data:`MAX_ROWS`: every
    object holding a tiny value and a field that names it among its own fields."""
    records: list[dict[Any, Any]] = []
    stack: list[Any] = [value]
    visits = MAX_VISITS
    while stack and len(records) < 4 * MAX_ROWS and visits:
        visits -= 1
        v = stack.pop()
        if isinstance(v, dict):
            records.append(v)
            inner = [x for x in itertools.islice(v.values(), MAX_VISITS) if _nested(x)]
        elif isinstance(v, list | tuple):
            inner = [x for x in v[:MAX_VISITS] if _nested(x)]
        else:
            continue
        stack.extend(reversed(inner))
    counts: dict[str, int] = {}
    read: list[tuple[frozenset[str], list[tuple[str, str]]]] = []
    roles = role_words(tool)
    for record in records:
        keys, texts = _read(record, roles)
        if keys and texts:
            read.append((keys, texts))
            for t in {t for _, t in texts}:  # a text twice in one record is still its own
                counts[t] = counts.get(t, 0) + 1
        if len(read) >= MAX_ROWS:
            break
    in_records: dict[str, int] = {}
    for _, texts in read:  # a word any text of two records holds names neither alone
        for word in {w for _, t in texts for w in _WORDS.findall(t)}:
            in_records[word] = in_records.get(word, 0) + 1
    rows: list[Row] = []
    for keys, texts in read:
        named = [(_naming(kind, t, counts[t]), kind, t) for kind, t in texts]
        naming = tuple(_words(kind, t) for how, kind, t in named if how == "names")[:MAX_NAMING]
        said = tuple(t for how, _, t in named if how == "said")[:MAX_NAMING]
        loose = tuple(
            dict.fromkeys(
                w for kind, t in texts if kind == "run" for w in _WORDS.findall(t)
                if in_records[w] == 1 and _said_alone(w) and w not in said
            )
        )[:MAX_NAMING]  # fmt: skip
        if naming or said or loose:
            rows.append((keys, naming, said, loose))
    return rows


def _nested(x: Any) -> bool:
    return isinstance(x, dict | list | tuple)


def _read(
    record: dict[Any, Any], tool_roles: frozenset[str]
) -> tuple[frozenset[str], list[tuple[str, str]]]:
    """A record's tiny ids as keys (``file=13``, ``id=13``) and its other short texts."""
    keys: set[str] = set()
    texts: list[tuple[str, str]] = []
    for k, x in itertools.islice(record.items(), 64):
        if isinstance(x, bool) or x is None or isinstance(x, dict | list | tuple):
            continue
        named = role_words(str(k)[:64])  # a field's name, not a page of text
        small = tiny(x)
        if small is not None and named & _ID_WORDS:  # an id ("id", "file_id"), not an amount
            roles = named | tool_roles if named <= _ID_WORDS else named
            keys.update(f"{w}={small[1]}" for w in roles)
            continue
        if named & _ID_WORDS and len(str(x)) <= MAX_ID:  # a longer id ("10013", a UUID)
            keys.update(value_keys(x))  # as the call's value is looked up: whole
        if isinstance(x, str):
            plain = _plain(x[:400]).strip()
            n = len(_WORDS.findall(plain))
            if n == 1 or (n and len(plain.split(None, 1)) == 1):
                token = plain.rstrip(".:/-")
                texts.append(("one", token))
                stem = _EXTENSION.sub("", token)  # "contracts-2024" of "contracts-2024.pdf"
                if stem != token and _WORDS.search(stem):
                    texts.append(("one", stem))
                texts.extend(_parts(token))
            elif 1 < n <= MAX_WORDS:
                texts.append(("run", plain))
                texts.extend(_parts(plain))
    return frozenset(sorted(keys)[:MAX_KEYS]), texts


def _parts(name: str) -> list[tuple[str, str]]:
    """A file name's words without its extensions, as a run of words a source holds in order
    however it joins them: "contracts-2024.pdf" is named by "contracts_2024.pdf", "contracts
    2024", "/docs/contracts-2024.pdf", "contracts–2024.docx" too (each holds "contracts 2024").
    Only a name of two words or more, one of three letters or more; not an address."""
    if "@" in name or "://" in name:
        return []
    stem = _EXTENSION.sub("", _EXTENSION.sub("", name))  # "report.tar.gz": two extensions
    words = _WORDS.findall(stem)
    if not 1 < len(words) <= MAX_WORDS or not any(w.isalpha() and len(w) > 2 for w in words):
        return []
    if stem == name and " " in name:
        return []  # a run of words with no extension is looked up by its pairs already
    return [("parts", " ".join(words))]


_EXTENSION = re.compile(r"\.[a-z][a-z0-9]{0,4}\Z")
"""A file name's extension: a name is said without it too ("delete contracts-2024")."""


def _naming(kind: str, text: str, count: int) -> str | None:
    """How a field's text names its record, where no other record of the result holds it:
    ``names`` for a run of words or a token no prose says by chance (a file name, an address, a
    word of at least six letters: "contracts-2024.pdf", "dentist appointment", "quarterly");
    ``said`` for a short word ("gym", "rent"), which names it only where the person says it (in
    content, "rent" is said of anything; the person who says "cancel my gym payment" and has one
    payment whose subject is "gym" chose that one); ``None`` for a text that several records
    hold, a word of one or two letters, or a word such as "the"."""
    if count > 1:
        return None
    if kind != "one" or any(not c.isalpha() for c in text) or len(text) >= 6:
        return "names"
    return "said" if len(text) >= 3 and text not in _FUNCTION_WORDS else None


def _said_alone(word: str) -> bool:
    """Whether a word of a record's run of words ("Spotify Premium") names it where the person
    acts on it alone ("cancel my Spotify payments") and no other record holds it: a word of
    letters, three or more, not one said of anything, nor a verb."""
    return len(word) >= 3 and word.isalpha() and word not in _FUNCTION_WORDS and word not in VERBS


def _words(kind: str, text: str) -> tuple[str, ...]:
    """What a naming text is looked up by: a token whole (one item), a run by its words (in
    pairs, :meth:`duraguard._sourcestore.SourceStore._phrase`)."""
    return (text,) if kind == "one" else tuple(_WORDS.findall(text))


def _forms(words: tuple[str, ...], prefix: str = "") -> tuple[int, ...]:
    """A naming text's hashes as the index holds them: a token whole, a run by its pairs."""
    if len(words) == 1:
        return (_h(prefix + words[0]),)
    return tuple(_h(f"{prefix}{a} {b}") for a, b in pairwise(words))


def hashed(rows: list[Row]) -> list[HashedRow]:
    """``rows`` as the index looks them up (:data:`HashedRow`)."""
    return [
        (
            tuple(sorted(map(_h, keys))),
            tuple(_forms(w) for w in naming),
            tuple(_forms(w, ACTED) for w in (*naming, *((x,) for x in said))),
            tuple(_forms((x,), ACTED) for x in loose),
        )
        for keys, naming, said, loose in rows
    ]


def rows_in(value: Any, entry: Any, keys: Any) -> list[HashedRow]:
    """The rows of a trusted result, as its step sent them where it did (``keys``: its
    :class:`~duraguard._result_keys.ResultKeys`, taken for what ``entry`` records), else read
    here."""
    sent = unpack_rows(getattr(keys, "rows", None))
    return sent if sent is not None else hashed(rows_of(value, str(getattr(entry, "tool", ""))))


def linked(
    rows: Iterable[HashedRow], outside: set[int], person: set[int], index: Mapping[int, list[int]]
) -> dict[int, set[tuple[int, ...]]]:
    """Per source (its serial in ``index``, hash -> serials holding it), the keys of the records
    of ``rows`` it names: a source of ``outside`` by a naming field, one of ``person`` by what
    its words act on (a naming field, a short word), or by a loose word where that is the only
    record its words name (in "cancel my gym payment", "payment" names no "Payment Protection
    Plan" beside the "gym" record)."""

    def holding(among: set[int], forms: _Forms) -> set[int]:
        out: set[int] = set()
        for hashes in forms:
            found = among.intersection(index.get(hashes[0], ()))
            for h in hashes[1:]:
                if not found:
                    break
                found.intersection_update(index.get(h, ()))
            out |= found
        return out

    to: dict[int, set[tuple[int, ...]]] = {}
    loose: dict[int, set[tuple[int, ...]]] = {}
    named: dict[int, set[tuple[int, ...]]] = {}
    for keys, naming, acted, words in rows:
        for s in holding(outside, naming):
            to.setdefault(s, set()).add(keys)
        for s in holding(person, acted):
            to.setdefault(s, set()).add(keys)
            named.setdefault(s, set()).add(keys)
        for s in holding(person, words):
            loose.setdefault(s, set()).add(keys)
            named.setdefault(s, set()).add(keys)
    for s, keys_of in loose.items():
        if len(named[s]) == 1:
            to.setdefault(s, set()).update(keys_of)
    return to


def pack_rows(rows: list[HashedRow]) -> str:
    """Rows for a step's output (:attr:`duraguard._result_keys.ResultKeys.rows`):
    ``version|shape|hashes``, the shape a row's count of keys, of its naming fields, of the
    person's forms, then of each naming field's hashes, each of the person's forms' and each
    loose word's (``2.1.1.1.1.1`` a row, rows joined by ``,``), the hashes packed as the index
    packs them, in that order."""
    shape = ",".join(
        ".".join(map(str, (len(k), len(a), len(b), *(len(n) for n in (*a, *b, *c)))))
        for k, a, b, c in rows
    )
    flat = [h for k, a, b, c in rows for h in (*k, *(x for n in (*a, *b, *c) for x in n))]
    return f"{ROWS_VERSION}|{shape}|{_pack(flat)}"


def unpack_rows(text: str | None) -> list[HashedRow] | None:
    """The rows :func:`pack_rows` wrote, or ``None`` where ``text`` is not that (another
    version, a shape the hashes do not fill, more than the bounds allow): read again then."""
    if not text:
        return None
    version, _, rest = text.partition("|")
    shape, _, packed = rest.partition("|")
    if version != str(ROWS_VERSION) or len(shape) > MAX_ROWS * (4 * MAX_NAMING + 3) * 4:
        return None
    try:
        raw = base64.b64decode(packed, validate=True)
        counts = [[int(c) for c in row.split(".")] for row in shape.split(",")] if shape else []
    except ValueError:
        return None
    if len(raw) % 8 or len(counts) > MAX_ROWS:
        return None
    flat = struct.unpack(f"<{len(raw) // 8}Q", raw)
    rows: list[HashedRow] = []
    at = 0
    for row in counts:
        if len(row) < 3:
            return None
        k, n_naming, n_acted, *lens = row
        if not 0 < k <= MAX_KEYS or not 0 <= n_naming <= MAX_NAMING:
            return None
        if not 0 <= n_acted <= 2 * MAX_NAMING or not n_naming + n_acted <= len(lens):
            return None
        if not lens or len(lens) > 4 * MAX_NAMING or not all(0 < n < MAX_WORDS for n in lens):
            return None
        keys, at = flat[at : at + k], at + k
        forms = []
        for n in lens:
            forms.append(flat[at : at + n])
            at += n
        acted = n_naming + n_acted
        rows.append(
            (keys, tuple(forms[:n_naming]), tuple(forms[n_naming:acted]), tuple(forms[acted:]))
        )
    return rows if at == len(flat) else None


__all__ = [
    "ACTED", "MAX_ACTED", "MAX_ROWS", "ROWS_VERSION", "HashedRow", "Row", "acted_keys", "hashed", "linked",
    "pack_rows", "rows_in", "rows_of", "unpack_rows",
]  # fmt: skip
