"""Stage four, the checks of what the person said: grounding, S1, S2 and the confirm read.

Heuristics over the person's words (see ``docs/policy.md`` for their measured error rates).
They only ever make an answer stricter: a refusal stands, and an ask is never turned into an
allow. S1, S2 and the confirm read read only the latest turn, and only when turns are given;
none of them ever changes the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._reading import Reading, normalise, read, same, value_kind
from ..._types import canonical_json
from .._text import leaves, pointer
from .call import Call, Stop

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
    out: set[str] = set()
    for e in call.session.entries:
        if e.ran:
            for _, v in leaves(e.result_fields):
                if not isinstance(v, bool) and v is not None:
                    out.add(str(v).lower())
    return out


def grounded(call: Call) -> Stop | None:
    s = call.session
    if call.kind == "read" or not s.turns:
        return None
    by_path = {p.path: p.sources for p in s.provenance}
    turns: list[Reading] | None = None
    results: set[str] | None = None
    for where, kind, value, raw in _values(call):
        if any(src.startswith(("turn:", "result:", "prompt")) for src in by_path.get(where, ())):
            continue
        turns = turns if turns is not None else [read(t) for t in s.turns]
        if any(_said_in(kind, value, r) for r in turns):
            continue
        results = results if results is not None else _returned(call)
        if value in results or str(raw).lower() in results:
            continue
        return Stop(
            "grounded",
            f"{where} is {raw!r}, which the person did not say and no tool returned. "
            "Ask the person for the value, or use one they gave.",
            ask=True,
            path=where,
        )
    return None


def s1_veto(call: Call) -> Stop | None:
    mode = _mode(call, "s1_veto")
    reading = call.turn
    if mode == "off" or reading is None or not reading.sends or call.kind != "write":
        return None
    if any(call.kind_of(e.tool) == "send" and e.ran for e in call.since_turn()):
        return None
    return _stop(
        call,
        "s1_veto",
        f"the person asked for something to be sent out, but {call.tool!r} does not send anything. "
        "Use a tool that sends, or tell the person it cannot be sent.",
        mode,
    )


def _takes(call: Call, dest: str) -> bool:
    for _, leaf in leaves(dict(call.args)):
        if isinstance(leaf, str) and dest.lstrip("#@") in leaf.lower():
            return True
    return False


def s2_veto(call: Call) -> Stop | None:
    mode = _mode(call, "s2_veto")
    reading = call.turn
    if mode == "off" or reading is None or call.kind == "read":
        return None
    earlier = [e for e in call.since_turn() if e.ran]
    for dest in reading.destinations():
        if _takes(call, dest):
            continue
        if any(dest.lstrip("#@") in canonical_json(e.args).lower() for e in earlier):
            continue
        return _stop(
            call,
            "s2_veto",
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
    mode = _mode(call, "confirm_read")
    reading = call.turn
    if mode == "off" or reading is None or call.kind == "read":
        return None
    mine = _values(call)
    said = [(k, v) for k, vs in reading.values.items() if k != "phone" or vs for v in vs]
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
        if spare is not None:
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


def _compatible_of(said_kind: str) -> tuple[str, ...]:
    return ("number", "id") if said_kind == "number" else (said_kind,)


CHECKS: tuple[tuple[str, Callable[[Call], Stop | None]], ...] = (
    ("grounded", grounded),
    ("s1_veto", s1_veto),
    ("s2_veto", s2_veto),
    ("confirm_read", confirm_read),
)
