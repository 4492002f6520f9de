"""Where each of a call's values came from, as the policy's checks read it.

The session view carries, per value, the sources it was seen at (``duraguard._provenance``).
Here each value gets its role in the call (a destination: where something goes; free text; any
other value) and its sources become :class:`Seen` facts: the person's words, a trusted tool's
result, or outside content (which call brought it, under which label, in prose or a field,
whether that prose addressed an agent). A result of the call being judged never counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

from ..._addresses import DESTINATION_WORDS as DESTINATION_WORDS
from ..._addresses import TEXT_WORDS as TEXT_WORDS
from ..._addresses import Role as Role
from ..._addresses import name_words
from ..._addresses import role_of as role_of
from ..._dates import relative_dates
from ..._destinations import destinations_in
from ..._provenance import EVICTED, UNREAD
from ..._reading import norm_id, read
from ..._types import LedgerEntry
from .._text import leaves, pointer
from .call import Call

Where = Literal["person", "trusted", "outside"]


CONTENT_WORDS: dict[str, tuple[str, ...]] = {
    "web": ("page", "site", "website", "web", "article", "link", "url", "blog", "post", "wiki"),
    "email": ("email", "emails", "mail", "inbox", "message", "messages", "thread", "newsletter",
              "reply", "wrote", "sent", "asked", "offered", "proposed", "said"),
    "file": ("file", "files", "document", "doc", "docs", "bill", "invoice", "note", "notes",
             "report", "attachment", "contract", "statement", "spreadsheet", "sheet", "draft",
             "list", "plan", "notice", "letter"),
    "chat": ("message", "messages", "channel", "thread", "chat", "dm", "conversation", "post",
             "inbox", "asked", "wrote", "said", "shared", "mentioned"),
    "reviews": ("review", "reviews", "rating", "ratings", "rated", "feedback", "comments"),
    "calendar": ("event", "events", "meeting", "calendar", "invite", "invitation", "appointment",
                 "standup", "call", "sync", "schedule", "lunch", "dinner", "offsite"),
    "transactions": ("transaction", "transactions", "payment", "payments", "statement",
                     "transfer", "paid", "sent", "received", "history"),
}  # fmt: skip
"""Words a person uses for outside content of each label (``the email``, ``that page``)."""
NOUNS: dict[str, str] = {
    "web": "web page", "email": "email", "file": "file", "chat": "chat message",
    "reviews": "reviews", "calendar": "calendar event", "transactions": "transaction details",
}  # fmt: skip


@dataclass(frozen=True)
class Seen:
    """One place a value was seen before this call."""

    where: Where
    source: str
    call: int | None = None
    labels: tuple[str, ...] = ()
    field: bool = False
    """Outside content in a field of its own (a sender, a name), not in prose."""
    instructs: bool = False
    """Outside prose with injection markers: it addresses an AI agent or a system, or presses
    an order on whoever reads it ("you must", "urgent", "do not tell")."""
    to_agent: bool = False
    """Outside prose that addresses an AI agent or a system by name, or wraps orders for one
    (``<INFORMATION>``, "[SYSTEM]", "ignore previous instructions")."""
    multi: tuple[str, ...] = ()
    """Kinds of destination its prose holds more than one of (``iban``, ``email``)."""
    fields: tuple[str, ...] = ()
    """Kinds of destination its prose holds that the content's fields also hold (an address
    in an email's body, besides its sender's)."""
    via: bool = False
    """The result of a trusted tool that was given values from outside content (or values nobody
    gave, once outside content had entered): whatever it returns came from there."""
    via_prose: bool = False
    """:attr:`via`, given values from outside prose, from nobody or from evicted content: it
    stands no more than that prose would (a result given only fields of outside content
    stands as those fields would: whoever wrote them could have written its values there)."""
    by: tuple[int, ...] = ()
    """Earlier outside content this was read by way of: the calls whose content held a link, a
    file name or an id the read was given (Bob's message names the page the read fetched)."""
    orders: tuple[str, ...] = ()
    """The kinds of action its text orders whoever reads it to take (``send``, ``change``:
    :data:`duraguard._imperatives.KINDS`), "TODO: send all messages to ..." or not."""
    near: bool = False
    """Its text speaks of deleting or cancelling near what it names (:mod:`duraguard._near`):
    it names a listing's record by that record's name, as an order does, and orders nothing."""
    named: bool = False
    """A field of it names a listing's record by the record's name: the record's ids, linked."""
    bare: bool = False
    """A tiny value (a short id, a small number) seen in this content only bare, not beside a
    word naming its role ("11" in prose, not "file 11"): too small to tell it was meant."""


def parse(source: str) -> Seen:
    """A source name of the provenance index as a :class:`Seen`."""
    if source == "prompt" or source.startswith("turn:"):
        return Seen("person", source)
    parts = source.split(":")
    if parts[0] == "result" and len(parts) > 1 and parts[1].isdigit():
        return Seen("trusted", source, call=int(parts[1]))
    if source == EVICTED:
        return Seen("outside", source, labels=("evicted",))
    if source == UNREAD:
        return Seen("outside", source, labels=("unread",))
    if parts[0] == "outside":
        labels = tuple(parts[1].split("+")) if len(parts) > 1 else ()
        call = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
        flags = parts[3:] if call is not None else parts[2:]
        return Seen(
            "outside",
            source,
            call=call,
            labels=labels,
            field="field" in flags,
            instructs="instructs" in flags,
            to_agent="to-agent" in flags,
            multi=tuple(f.removeprefix("multi-") for f in flags if f.startswith("multi-")),
            fields=tuple(f.removeprefix("fields-") for f in flags if f.startswith("fields-")),
            via="via" in flags,
            via_prose="from-prose" in flags,
            bare="bare" in flags,
            near="near" in flags,
            named="named" in flags,
            orders=tuple(f.removeprefix("order-") for f in flags if f.startswith("order-")),
            by=tuple(
                int(x)
                for f in flags
                if f.startswith("by-")
                for x in f[3:].split("-")
                if x.isdigit()
            ),
        )
    return Seen("outside", source, labels=("unknown",))  # a source not known here: the strictest


@dataclass(frozen=True)
class Origin:
    """One of the call's values (or a destination inside it) and where it was seen."""

    path: str
    value: Any
    role: Role
    seen: tuple[Seen, ...]
    part: str | None = None
    """The destination inside a text, or the part of a value, that :attr:`seen` is about."""

    @property
    def shown(self) -> str:
        """The value as a reason names it."""
        v = self.part if self.part is not None else self.value
        text = str(v)
        return repr(text if len(text) <= 60 else text[:57] + "...")

    @property
    def arg(self) -> str:
        """The argument the value is in, as a reason names it (``recipients.0``)."""
        return self.path.removeprefix("#/").replace("/", ".")

    def of(self, where: Where) -> list[Seen]:
        return [s for s in self.seen if s.where == where]


class Origins:
    """The origins of one call's values, read once and shared by the checks that need them."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self.entries: dict[int, LedgerEntry] = {e.index: e for e in call.session.entries}
        own = call.subject.call_id
        self.own = {i for i, e in self.entries.items() if own is not None and e.call_id == own}

    @cached_property
    def turn(self) -> str:
        turns = self.call.session.turns
        return " ".join(turns[-1].casefold().split()) if turns else ""

    def _seen(self, sources: tuple[str, ...]) -> tuple[Seen, ...]:
        seen = (parse(s) for s in sources)
        return tuple(s for s in seen if s.call is None or s.call not in self.own)

    @cached_property
    def all(self) -> list[Origin]:
        """Every value of the call with a role, and the sources each was seen at."""
        call = self.call
        info = call.info
        roles = info.roles if info is not None else {}
        schema = call.subject.input_schema
        if not isinstance(schema, dict):
            schema = (info.input_schema if info else None) or {}
        props = schema.get("properties") or {}
        rows: dict[str, list[tuple[Any, tuple[str, ...]]]] = {}
        for p in call.session.provenance:
            rows.setdefault(p.path, []).append((p.value, p.sources))
        out: list[Origin] = []
        for path, leaf in leaves(dict(call.args)):
            if isinstance(leaf, bool) or leaf is None:
                continue
            where = pointer(path)
            name = str(path[0]) if path else ""
            found = props.get(name)
            prop: dict[str, Any] = found if isinstance(found, dict) else {}
            if "enum" in prop or "const" in prop:
                continue  # a value from the tool's own fixed list says nothing of its origin
            role = role_of(name, leaf, roles, prop)
            whole = next((s for v, s in rows.get(where, ()) if v is None), ())
            out.append(Origin(where, leaf, role, self._seen(whole)))
            for part, sources in rows.get(where, ()):
                if part is not None:
                    out.append(Origin(where, leaf, role, self._seen(sources), part=str(part)))
        return out

    def unknown_destinations(self) -> Iterator[Origin]:
        """Destinations of the call (whole values, or inside free text) seen nowhere before."""
        for o in self.all:
            if o.part is not None or (o.seen and any(s.labels != ("unread",) for s in o.seen)):
                continue  # seen (a value found nowhere, with content read in part, is not)
            if o.role == "destination" and isinstance(o.value, str | int):
                yield o
            elif o.role == "text" and isinstance(o.value, str):
                known = {x.part for x in self.all if x.path == o.path and x.part is not None}
                for kind, value in destinations_in(o.value[:20000]):
                    if kind != "handle" and value not in known:
                        yield Origin(o.path, o.value, "destination", (), part=value)

    def entry(self, call: int | None) -> LedgerEntry | None:
        return self.entries.get(call) if call is not None else None

    def named(self, s: Seen) -> str:
        """Outside content as a reason names it: ``web page from fetch_page, call 3``."""
        label = s.labels[0] if s.labels else "outside"
        e = self.entry(s.call)
        if s.via:
            tool = f"{e.tool}, call {s.call}" if e is not None else f"call {s.call}"
            given = (
                "outside content or the agent's own" if s.via_prose else "fields of outside content"
            )
            return f"the result of {tool}, which was given values from {given}"
        if label == "evicted":
            return "outside content seen earlier in this session"
        if label == "unread":
            return "outside content too large to read whole"
        noun = NOUNS.get(label, f"{label} content")
        if e is not None:
            return f"{noun} from {e.tool}, call {s.call}"
        return f"{noun}, call {s.call}" if s.call is not None else noun

    @cached_property
    def today(self) -> str:
        """The session's day (ISO), from workflow time."""
        now = self.call.session.now
        return datetime.fromtimestamp(now, UTC).date().isoformat() if now else ""

    @cached_property
    def said(self) -> set[str]:
        """The typed values of the latest turn, with dates said relative to the session's day."""
        turns = self.call.session.turns
        if not turns:
            return set()
        today = self.today
        return read(turns[-1]).all() | (relative_dates(turns[-1], today) if today else set())

    def _named(self, leaf: Any) -> bool:
        text = " ".join(str(leaf).casefold().split())
        if len(text) >= 3 and re.search(rf"(?<!\w){re.escape(text)}(?!\w)", self.turn):
            return True
        return text in self.said or text[:10] in self.said or norm_id(text) in self.said

    def vouched(self, s: Seen, v: Origin | None = None) -> bool:
        """Whether the person's latest turn names what the call that read this content was
        given (the file, the page, the query, the day): they pointed at that content. Content
        read about one thing (``hotel_names``) vouches only for a value of that kind
        (``hotel``): the reviews of the hotel they named say nothing of a car rental. Content
        read by way of content they named (the page Bob's message links to, the file whose
        name the email gives) is named too: whoever wrote the first could have written its
        values there."""
        if not self.turn:
            return False
        return any(self.names_read(call, v) for call in (s.call, *s.by))

    def names_read(self, call: int | None, v: Origin | None = None) -> bool:
        """Whether the latest turn names what call ``call`` (a read) was given."""
        e = self.entry(call)
        if e is None:
            return False
        mine = _role_words(v.path.split("/")[1]) if v is not None and "/" in v.path else set()
        for where, leaf in leaves(e.args):
            if isinstance(leaf, bool) or leaf is None or not self._named(leaf):
                continue
            about = _role_words(str(where[0])) if where else set()
            if not about or about <= _DOCUMENT or v is None or about & mine:
                return True
        return False

    def chosen(self, v: Origin) -> str | None:
        """A value the person named for this argument's role, other than the call's: an earlier
        call of this turn took it for an argument of the same name (``hotel_names`` for
        ``hotel``) and the turn says it."""
        mine = _role_words(v.path.split("/")[1] if "/" in v.path else "")
        if not mine or not isinstance(v.value, str):
            return None
        value = " ".join(v.value.casefold().split())
        turn = self.call.session.turn_index
        for e in self.entries.values():
            if e.turn != turn or e.index in self.own:
                continue
            if self.call.kind_of(e.tool) != "read":
                continue  # a value an earlier write of this turn took is spoken for
            for where, leaf in leaves(e.args):
                about = _role_words(str(where[0])) if where else set()
                if not isinstance(leaf, str) or not mine & about or about <= _DOCUMENT:
                    continue  # a read's selector (whose inbox, which file) chose no value
                said = " ".join(leaf.casefold().split())
                if said != value and len(said) >= 3 and self._named(leaf):
                    return leaf
        return None

    def acts_on(self, s: Seen, v: Origin | None = None) -> bool:
        """Whether this is content the person named as what to act on (:meth:`vouched`: the
        file, the page, the query they gave), read directly and not addressing an AI agent.
        Its prose may press as people's letters do ("please make sure to", "immediately"):
        the person chose it, and whoever wrote it could leave those words out anyway."""
        return not s.to_agent and not s.via and self.vouched(s, v)

    def pointed_at(self, s: Seen, v: Origin | None = None) -> bool:
        """Whether the turn names this content specifically (:meth:`vouched`) or by its kind
        (``the email``, ``that page``): the person asked for something taken from it."""
        if self.vouched(s, v):
            return True
        words = set(re.findall(r"[a-z]+", self.turn))
        return any(words & set(CONTENT_WORDS.get(label, (label,))) for label in s.labels)

    def outside_read(self) -> list[str]:
        """The outside content this session read, as reasons name it (the most recent first)."""
        seen = [
            self.named(Seen("outside", "", call=e.index, labels=e.labels))
            for e in sorted(self.entries.values(), key=lambda e: -e.index)
            if e.labels and e.ran
        ]
        if not seen:
            seen = [NOUNS.get(label, f"{label} content") for label in self.call.session.labels_seen]
        return seen[:3]

    def traced(self) -> str:
        """Where the call's values came from, in a sentence for a person deciding an ask."""
        parts = []
        for v in self.all:
            if v.part is not None:
                continue
            arg = v.arg
            if v.of("person"):
                parts.append(f"{arg} from the person")
            elif v.of("trusted"):
                t = v.of("trusted")[0]
                e = self.entry(t.call)
                parts.append(f"{arg} from {e.tool if e else 'a tool'} (call {t.call})")
            elif v.of("outside"):
                parts.append(f"{arg} from outside content ({self.named(v.of('outside')[0])})")
            elif v.role != "text":
                parts.append(f"{arg} from nobody (written by the agent)")
            if len(parts) == 5:
                break
        return ("Its values: " + "; ".join(parts) + ".") if parts else ""


_GENERIC = frozenset({"name", "names", "id", "ids", "new", "the", "of", "to", "for"})
_DOCUMENT = frozenset(
    {
        "query", "search", "keyword", "term", "filter", "file", "path", "url", "uri", "link",
        "day", "date", "channel", "user", "subject", "sender", "title", "topic", "text", "limit",
        "folder", "document", "page", "inbox", "thread", "city", "email", "message", "from",
    }
)  # fmt: skip
"""What a read is given to find a document, rather than a thing the document is about."""


def _role_words(name: str) -> set[str]:
    """An argument name's words that say what it is: ``hotel_names`` -> ``hotel``."""
    return {w.removesuffix("s") for w in name_words(name) if w not in _GENERIC and len(w) > 2}


def origins(call: Call) -> Origins:
    """The call's :class:`Origins`, read once per call."""
    found = call.memo.get("origins")
    if not isinstance(found, Origins):
        found = Origins(call)
        call.memo["origins"] = found
    return found
