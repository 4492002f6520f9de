"""What the checks of what the person said read of a call: its typed values, the
destinations the typed reading leaves out, the values worked out from given ones, what
trusted results returned; and how such a check stops (an ask, or a refusal in strict mode)."""

from __future__ import annotations

import re
from typing import Any

from ..._reading import Reading, norm_number, normalise, same, value_kind
from .._text import leaves, pointer
from .call import Call, Stop
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
