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

from ..._reading import URL, Reading, _unrun, norm_number, normalise, read, same, value_kind
from ..._types import canonical_json
from .._text import leaves, pointer
from .call import Call, Stop
from .intent import asks_for
from .origins import Origins, Seen, origins, parse, role_of

_COMPATIBLE = {"id": ("id", "number"), "number": ("number",)}


def _schema(call: Call) -> dict[str, Any]:
    s = call.subject.input_schema or (call.info.input_schema if call.info else None)
    return s if isinstance(s, dict) else {}


def _values(call: Call) -> list[tuple[str, str, str, Any]]:
    """The call's typed values: ``(pointer, kind, normalised, raw)``; prose and enums skipped."""
    memo = call.memo.get("values")
    if memo is not None:
        return memo  # type: ignore[no-any-return]
    props = _schema(call).get("properties") or {}
    out = []
    for path, leaf in leaves(dict(call.args)):
        prop = props.get(str(path[0])) if path else None
        prop = prop if isinstance(prop, dict) else {}
        if "enum" in prop or "const" in prop:
            continue
        kind = value_kind(str(path[-1]) if path else "", leaf, prop if len(path) == 1 else None)
        if kind is None:
            continue
        n = normalise(kind, leaf)
        if n is not None:
            out.append((pointer(path), kind, n, leaf))
    call.memo["values"] = out
    return out


def _said_in(kind: str, value: str, reading: Reading) -> bool:
    for k in _COMPATIBLE.get(kind, (kind,)):
        if any(same(kind, value, s) for s in reading.of(k)):
            return True
    return False


def _mode(call: Call, check: str) -> str:
    return str(getattr(call.settings, check, "confirm"))


def _stop(call: Call, check: str, reason: str, mode: str) -> Stop:
    if mode == "refuse":
        return Stop(check, reason + " Refused (strict mode).")
    return Stop(check, reason, ask=True)


def _returned(call: Call) -> set[str]:
    """Result fields of trusted calls in the view: not outside content, not this call's own."""
    out: set[str] = set()
    own = call.subject.call_id
    for e in call.session.entries:
        if e.ran and not e.labels and (own is None or e.call_id != own):
            for _, v in leaves(e.result_fields):
                if not isinstance(v, bool) and v is not None:
                    out.add(str(v).lower())
    return out


def _destinations(call: Call, typed: set[str]) -> list[tuple[str, str, str, Any]]:
    """Destinations the typed reading does not cover (a user's or a channel's name)."""
    props = _schema(call).get("properties") or {}
    roles = call.info.roles if call.info is not None else {}
    out = []
    for path, leaf in leaves(dict(call.args)):
        where = pointer(path)
        if where in typed or not isinstance(leaf, str) or not path:
            continue
        prop = props.get(str(path[0]))
        prop = prop if isinstance(prop, dict) else {}
        if "enum" not in prop and role_of(str(path[0]), leaf, roles, prop) == "destination":
            out.append((where, "name", " ".join(leaf.casefold().split()), leaf))
    return out


def _given(call: Call, sources: tuple[str, ...], own: set[int]) -> bool:
    """Said by the person, or returned by a trusted tool (not the call being judged)."""
    for s in sources:
        if s == "prompt" or s.startswith("turn:"):
            return True
        if s.startswith("result:") and int(s[7:]) not in own:
            return True
    return False


def _workings(call: Call) -> dict[str, str]:
    """The call's values the view names a working of (``duraguard._derived``: a sum, a
    difference, a share, a date some days on) whose every operand was said by the person,
    returned by a trusted tool, or taken from content the person pointed at: pointer ->
    the first such working (after ``=`` where the person said every operand)."""
    memo = call.memo.get("workings")
    if isinstance(memo, dict):
        return memo
    s = call.session
    own = {e.index for e in s.entries if call.subject.call_id and e.call_id == call.subject.call_id}
    o = origins(call)
    out: dict[str, str] = {}
    for p in s.provenance:
        if not p.path.startswith("=") or not p.sources or p.path[1:] in out:
            continue
        if all(_given(call, (src,), own) or _pointed(o, parse(src)) for src in p.sources):
            mine = all(parse(src).where == "person" for src in p.sources)
            out[p.path[1:]] = ("=" if mine else "") + str(p.value)
    call.memo["workings"] = out
    return out


def _operands(call: Call) -> set[str]:
    """The numbers the call's accepted sums were made of (``75 - 60``: 75 and 60); a date
    moved by days uses no number up, nor does a sum of two numbers the person both said
    ("pay Bob 60 and Ana 15" answered with 75: the person is shown what they said)."""
    out = set()
    for working in _workings(call).values():
        if working.startswith("=") or re.match(r"\d{4}-\d{2}-\d{2}", working):
            continue
        for token in re.findall(r"\d+(?:\.\d+)?", working):
            n = norm_number(token)
            if n is not None:
                out.add(n)
    return out


def _pointed(o: Origins, s: Seen) -> bool:
    return (
        s.where == "outside"
        and s.call not in o.own
        and o.pointed_at(s)
        and ((s.field and not s.via_prose) or not s.instructs or o.acts_on(s))
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


def confirm_read(call: Call) -> Stop | None:
    """The call's values read against the person's latest turn: one it contradicts is asked about."""
    mode = _mode(call, "confirm_read")
    reading = call.turn
    if mode == "off" or reading is None or call.kind == "read":
        return None
    mine = _values(call)
    used_before = " ".join(
        str(v).lower() for e in call.since_turn() if e.ran for _, v in leaves(e.args)
    )
    replaced = _replaced(call.session.turns[-1]) | _operands(call)  # "60 in all": 75 - 60
    said = [
        (k, v)
        for k, vs in reading.values.items()
        for v in vs
        if v.lstrip("#@-") not in used_before  # an earlier step of this turn took it
        and v not in replaced  # "1150 instead of 1100": 1100 is not wanted
    ]
    used = [False] * len(mine)
    unmatched: list[tuple[str, str]] = []
    for kind, value in said:
        hit = False
        for i, (_, ck, cv, _) in enumerate(mine):
            if kind in _COMPATIBLE.get(ck, (ck,)) and same(ck, cv, value):
                used[i] = hit = True
        if not hit:
            unmatched.append((kind, value))
    present = {str(k) for k in call.args}
    props = _schema(call).get("properties") or {}
    for kind, value in unmatched:
        spare = next(
            (
                m
                for i, m in enumerate(mine)
                if not used[i]
                and (m[1] == kind or (kind == "number" and m[1] == "id" and len(value) >= 4))
            ),
            None,
        )
        if spare is not None and not (spare[1] == "date" and spare[2][:10] == origins(call).today):
            where, _, _, raw = spare
            return _stop(
                call,
                "confirm_read",
                f"the person said {value!r} but the call has {where} = {raw!r}. "
                "The call was not changed; the person is shown both.",
                mode,
            )
        missing = next(
            (
                n
                for n, p in props.items()
                if n not in present and _prop_kind(n, p) in _compatible_of(kind)
            ),
            None,
        )
        if missing is not None:
            return _stop(
                call,
                "confirm_read",
                f"the person said {value!r} but the call has no {missing!r}. The call was not changed; "
                f"call again with {missing}={value!r} if that is what they meant.",
                mode,
            )
    return None


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
