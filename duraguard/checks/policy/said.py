"""Stage four, the checks of what the person said: grounding, S1, S2 and the confirm read.

Heuristics over the person's words (see ``docs/policy.md`` for their measured error rates).
They only ever make an answer stricter: a refusal stands, and an ask is never turned into an
allow. S1, S2 and the confirm read read only the latest turn, and only when turns are given;
none of them ever changes the call. Grounding takes a value worked out from given ones (the
view's workings, :mod:`duraguard._derived`) for given.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..._reading import URL, Reading, _unrun, norm_number, read, same, value_kind
from ..._types import canonical_json
from .._text import leaves
from .call import Call, Stop
from .intent import asks_for
from .origins import origins, parse
from .said_values import (
    _COMPATIBLE,
    _destinations,
    _given,
    _mode,
    _operands,
    _returned,
    _said_in,
    _schema,
    _stop,
    _values,
    _workings,
)


def grounded(call: Call) -> Stop | None:
    """A value of a write that nobody gave (not the person, not a trusted result) is asked about."""
    s = call.session
    if call.settings.grounded == "off" or call.kind == "read" or not s.turns:
        return None
    rows = {p.path: p.sources for p in s.provenance if p.value is None}
    own = {e.index for e in s.entries if call.subject.call_id and e.call_id == call.subject.call_id}
    turns: list[Reading] | None = None
    results: set[str] | None = None
    typed = _values(call)
    for where, kind, value, raw in [*typed, *_destinations(call, {t[0] for t in typed})]:
        sources = rows.get(where, ())
        if _given(call, sources, own):
            continue
        o = origins(call)
        outside = [x for x in (parse(src) for src in sources) if x.where == "outside"]
        if any(o.pointed_at(x) for x in outside):
            continue  # taken from content the person pointed at
        if kind == "date" and (value in o.said or value[:10] in o.said or value[:10] == o.today):
            continue  # today, "tomorrow", "on Friday": read against the session's day
        if kind == "name":
            if any(value and value in " ".join(t.casefold().split()) for t in s.turns):
                continue
        else:
            turns = turns if turns is not None else [read(t) for t in s.turns]
            if any(_said_in(kind, value, r) for r in turns):
                continue
        results = results if results is not None else _returned(call)
        if value in results or str(raw).lower() in results:
            continue
        if where in _workings(call):
            continue  # the difference, the share, the day before: from values that were given
        seen = f" (only outside content carried it: {o.named(outside[0])})" if outside else ""
        return Stop(
            "grounded",
            f"{where} is {raw!r}, which the person did not say and no trusted tool returned{seen}. "
            "Ask the person for the value, or use one they gave.",
            ask=True,
            path=where,
        )
    return None


def asked_to_send(call: Call) -> Stop | None:
    """The person asked for something to be sent out, and this write sends nothing."""
    mode = _mode(call, "asked_to_send")
    reading = call.turn
    if mode == "off" or reading is None or not reading.sends or call.kind != "write":
        return None
    if asks_for(call.session.turns[-1], call.info, call.tool):
        return None  # the turn asks for this write too ("book a table and email Sofie")
    if any(call.kind_of(e.tool) == "send" and e.ran for e in call.since_turn()):
        return None
    return _stop(
        call,
        "asked_to_send",
        f"the person asked for something to be sent out, but {call.tool!r} does not send anything. "
        "Use a tool that sends, or tell the person it cannot be sent.",
        mode,
    )


def _takes(call: Call, dest: str) -> bool:
    for _, leaf in leaves(dict(call.args)):
        if isinstance(leaf, str) and dest.lstrip("#@") in leaf.lower():
            return True
    return False


_READ_VERBS = frozenset(
    {"visit", "read", "check", "see", "look", "open", "browse", "fetch", "find", "get", "from",
     "summarize", "summarise", "review", "learn", "search", "go", "scan", "study", "consult",
     "download", "use", "using"}
)  # fmt: skip
_PUT_VERBS = frozenset(
    {"post", "upload", "publish", "submit", "put", "push", "send", "share", "forward", "email",
     "mail", "message", "write", "add", "save", "deliver", "notify", "ping", "broadcast"}
)  # fmt: skip


_OWNERS = frozenset({"the", "a", "an", "her", "his", "their", "my", "our", "your", "its", "this"})


@lru_cache(maxsize=1024)
def _read_from(turn: str) -> frozenset[str]:
    """The links a turn gives as something to read, not as a place to send to: the nearest verb
    before one in its sentence is a verb of reading ("visit", "summarise the article at", "find
    her address on her website"), not one of sending ("post it to", "upload to")."""
    out = set()
    for m in URL.finditer(turn):
        before = re.split(r"[.;!?\n]\s", turn[max(0, m.start() - 160) : m.start()])[-1]
        words = re.findall(r"[a-z]+(?:-[a-z]+)*", before.lower())[-12:]
        for i in range(len(words) - 1, -1, -1):
            word = words[i].removeprefix("e-")
            if word in _PUT_VERBS and not (i and words[i - 1] in _OWNERS):
                break  # "post it to", not "her e-mail on her website"
            if word in _READ_VERBS:
                out.add(_unrun(m.group(0)).rstrip(".,;:!?)").lower())
                break
    return frozenset(out)


def asked_destination(call: Call) -> Stop | None:
    """The person named where this should go, and this call does not take it."""
    mode = _mode(call, "asked_destination")
    reading = call.turn
    if mode == "off" or reading is None or call.kind == "read":
        return None
    if (
        call.kind == "write"
        and reading.sends
        and asks_for(call.session.turns[-1], call.info, call.tool)
    ):
        return None  # the destination is for the sending step ("book it and email Sofie")
    earlier = [e for e in call.since_turn() if e.ran]
    read_from = _read_from(call.session.turns[-1])
    for dest in reading.destinations():
        if dest in read_from:
            continue  # "visit www.dora.example", "the article at www.news.example": a source
        if _takes(call, dest):
            continue
        if any(dest.lstrip("#@") in canonical_json(e.args).lower() for e in earlier):
            continue
        return _stop(
            call,
            "asked_destination",
            f"the person named {dest!r} as where this should go, but this call to {call.tool!r} does not take it. "
            "Use a tool that can deliver to it, with that destination.",
            mode,
        )
    return None


def _prop_kind(name: str, prop: Any) -> str | None:
    prop = prop if isinstance(prop, dict) else {}
    if "enum" in prop or "const" in prop:
        return None
    sample: Any = 0 if prop.get("type") in ("number", "integer") else "x"
    if prop.get("type") in ("number", "integer"):
        return "number"
    return value_kind(name, sample, prop) or (
        "email" if any(k in name.lower() for k in ("email", "recipient")) else None
    )


_Typed = list[tuple[str, str, str, Any]]
"""The call's typed values (:func:`_values`): ``(pointer, kind, normalised, raw)``."""


def confirm_read(call: Call) -> Stop | None:
    """The call's values read against the person's latest turn: one it contradicts is asked about."""
    mode = _mode(call, "confirm_read")
    reading = call.turn
    if mode == "off" or reading is None or call.kind == "read":
        return None
    mine = _values(call)
    unmatched, used = _unmatched(_said_still_wanted(call, reading), mine)
    present = {str(k) for k in call.args}
    props = _schema(call).get("properties") or {}
    for kind, value in unmatched:
        stop = _contradicted(call, kind, value, mine, used, mode)
        if stop is None:
            stop = _left_out(call, kind, value, present, props, mode)
        if stop is not None:
            return stop
    return None


def _said_still_wanted(call: Call, reading: Reading) -> list[tuple[str, str]]:
    """The values the person's turn gives, ``(kind, value)``, but those an earlier step of this
    turn took and those the turn says it replaces ("1150 instead of 1100": 1100 is not wanted)."""
    used_before = " ".join(
        str(v).lower() for e in call.since_turn() if e.ran for _, v in leaves(e.args)
    )
    replaced = _replaced(call.session.turns[-1]) | _operands(call)  # "60 in all": 75 - 60
    return [
        (k, v)
        for k, vs in reading.values.items()
        for v in vs
        if v.lstrip("#@-") not in used_before  # an earlier step of this turn took it
        and v not in replaced  # "1150 instead of 1100": 1100 is not wanted
    ]


def _unmatched(
    said: list[tuple[str, str]], mine: _Typed
) -> tuple[list[tuple[str, str]], list[bool]]:
    """What the person said that no value of the call matches, and which of the call's values
    matched something they said."""
    used = [False] * len(mine)
    unmatched: list[tuple[str, str]] = []
    for kind, value in said:
        hit = False
        for i, (_, ck, cv, _) in enumerate(mine):
            if kind in _COMPATIBLE.get(ck, (ck,)) and same(ck, cv, value):
                used[i] = hit = True
        if not hit:
            unmatched.append((kind, value))
    return unmatched, used


def _contradicted(
    call: Call, kind: str, value: str, mine: _Typed, used: list[bool], mode: str
) -> Stop | None:
    """A value of the call of the kind the person said, that matched nothing they said: the
    call has another value where they gave this one (today's date aside)."""
    spare = next(
        (
            m
            for i, m in enumerate(mine)
            if not used[i]
            and (m[1] == kind or (kind == "number" and m[1] == "id" and len(value) >= 4))
        ),
        None,
    )
    if spare is None or (spare[1] == "date" and spare[2][:10] == origins(call).today):
        return None
    where, _, _, raw = spare
    if spare[1] == "id" and _named_by_person(call, where):
        return None  # "delete contracts-2024.pdf": the listing's record of that name is 13
    return _stop(
        call,
        "confirm_read",
        f"the person said {value!r} but the call has {where} = {raw!r}. "
        "The call was not changed; the person is shown both.",
        mode,
    )


def _named_by_person(call: Call, where: str) -> bool:
    """Whether the index holds the call's value at ``where`` as the person's latest turn's: an
    id of the record their words named by another field (``duraguard._rows``)."""
    latest = {f"turn:{call.session.turn_index}"} | (
        {"prompt"} if call.session.turn_index <= 0 else set()
    )
    return any(
        src in latest
        for p in call.session.provenance
        if p.path == where and p.value is None
        for src in p.sources
    )


def _left_out(
    call: Call, kind: str, value: str, present: set[str], props: dict[str, Any], mode: str
) -> Stop | None:
    """A field of the tool's schema for the kind the person said, which the call leaves out."""
    missing = next(
        (
            n
            for n, p in props.items()
            if n not in present and _prop_kind(n, p) in _compatible_of(kind)
        ),
        None,
    )
    if missing is None:
        return None
    return _stop(
        call,
        "confirm_read",
        f"the person said {value!r} but the call has no {missing!r}. The call was not changed; "
        f"call again with {missing}={value!r} if that is what they meant.",
        mode,
    )


_REPLACED = re.compile(
    r"\b(?:instead of|rather than|not|no longer|was|from|under|over|below|above|less than|"
    r"more than|up to|at most|at least|max|min|within)\s+(?:the\s+)?[$€£]?(\d[\d,]*(?:\.\d+)?)"
    r"(?!\s*(?:to|-)\s*\d)",
    re.I,
)


@lru_cache(maxsize=1024)
def _replaced(turn: str) -> frozenset[str]:
    """Values a turn names as what is to be replaced or as a bound, not as the value wanted
    ("1150 instead of 1100", "only if it's under 100")."""
    out = set()
    for m in _REPLACED.finditer(turn):
        n = norm_number(m.group(1))
        if n is not None:
            out.add(n)
    return frozenset(out)


def _compatible_of(said_kind: str) -> tuple[str, ...]:
    return ("number", "id") if said_kind == "number" else (said_kind,)


CHECKS: tuple[tuple[str, Callable[[Call], Stop | None]], ...] = (
    ("grounded", grounded),
    ("asked_to_send", asked_to_send),
    ("asked_destination", asked_destination),
    ("confirm_read", confirm_read),
)


s1_veto, s2_veto = asked_to_send, asked_destination  # their earlier names
