"""JSON Schema patterns read as ECMA-262 regular expressions, each match bounded in time.

JSON Schema's ``pattern``, ``patternProperties`` and ``format: regex`` are ECMA-262 regular
expressions; ``jsonschema`` hands them to Python's ``re``, which rejects ``\\p{L}`` and reads
``$``, ``\\d``, ``\\w``, ``\\s`` and ``.`` differently. Here a pattern is translated to the
``regex`` package's syntax with ECMA meanings (``\\d``, ``\\w`` and ``\\b`` are ASCII, ``$`` is the
very end, ``\\s`` is ECMA's whitespace, ``.`` stops at every line terminator, ``\\p{..}``, named
groups and ``\\k<name>`` work)
and every search runs under a deadline, so a catastrophic pattern (ReDoS) refuses instead of
stalling the worker. The keyword implementations below replace ``jsonschema``'s for the four
keywords that match property names or strings against patterns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import regex
from jsonschema.exceptions import ValidationError
from referencing.jsonschema import lookup_recursive_ref

_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_OUTSIDE = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[A-Za-z0-9_]",
    "W": "[^A-Za-z0-9_]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
}
_WORD = "[A-Za-z0-9_]"
_OUTSIDE["b"] = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_OUTSIDE["B"] = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
# Inside a class the negated escapes are written as ranges (the complement of an ASCII set).
_INSIDE = {
    "d": "0-9",
    "w": "A-Za-z0-9_",
    "s": _SPACE,
    "D": "\\x00-/:-\\U0010ffff",
    "W": "\\x00-/:-@\\[-^`{-\\U0010ffff",
    "S": "\\x00-\\x08\\x0e-\\x1f!-\\x9f\\xa1-\\u167f\\u1681-\\u1fff\\u200b-\\u2027\\u202a-\\u202e"
    "\\u2030-\\u205e\\u2060-\\u2fff\\u3001-\\ufefe\\uff00-\\U0010ffff",
    "b": "\\x08",
}
_DEADLINE: ContextVar[float | None] = ContextVar("duraguard_pattern_deadline", default=None)


class PatternTimeout(Exception):
    """A pattern took longer than its time budget on one value: the check cannot decide."""

    def __init__(self, pattern: str, seconds: float) -> None:
        super().__init__(
            f"the pattern {pattern[:80]!r} took over {seconds:.2g}s on one value (catastrophic "
            "backtracking?); the value is refused until the schema's pattern is fixed"
        )
        self.pattern = pattern


def translate(pattern: str) -> str:
    """``pattern`` (ECMA-262) in the ``regex`` package's syntax, meaning the same."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            i += 2
            if e in _INSIDE and in_class:
                out.append(_INSIDE[e])
            elif e in _OUTSIDE and not in_class:
                out.append(_OUTSIDE[e])
            elif e == "u" and pattern.startswith("{", i) and "}" in pattern[i:]:
                end = pattern.index("}", i)
                out.append(f"\\U{int(pattern[i + 1 : end], 16):08x}")
                i = end + 1
            elif e == "k" and pattern.startswith("<", i) and ">" in pattern[i:]:
                end = pattern.index(">", i)
                out.append(f"(?P={pattern[i + 1 : end]})")
                i = end + 1
            elif e == "c" and i < n and pattern[i].isascii() and pattern[i].isalpha():
                out.append(f"\\x{ord(pattern[i]) % 32:02x}")
                i += 1
            else:
                out.append("\\" + e)
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif pattern.startswith("[^]", i):
            out.append("[\\s\\S]")
            i += 3
            continue
        elif pattern.startswith("[]", i):
            out.append("(?!)")
            i += 2
            continue
        elif c == "[":
            in_class = True
            out.append(c)
        elif c == "$":
            out.append("\\Z")  # the very end: ECMA's $ never matches before a final newline
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def compile_ecma(pattern: str) -> regex.Pattern[str]:
    """The compiled form of an ECMA-262 pattern; raises ``regex.error`` where it is invalid."""
    return regex.compile(translate(pattern), regex.V0)


def is_valid(pattern: object) -> bool:
    """Whether ``pattern`` reads as a regular expression (``format: regex``)."""
    if not isinstance(pattern, str):
        return True
    try:
        compile_ecma(pattern)
    except (regex.error, ValueError, OverflowError):
        return False
    return True


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Give every pattern search inside this block ``seconds`` in total."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within what is left of the deadline."""
    compiled = compile_ecma(pattern)
    ends = _DEADLINE.get()
    if ends is None:
        return compiled.search(text) is not None
    left = ends - time.monotonic()
    if left <= 0:
        raise PatternTimeout(pattern, 0.0)
    try:
        return compiled.search(text, timeout=left) is not None
    except TimeoutError:
        raise PatternTimeout(pattern, left) from None


# -- keyword implementations ------------------------------------------------------------------


def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        for k, v in instance.items():
            if search(patrn, k):
                yield from validator.descend(v, subschema, path=k, schema_path=patrn)


def _additional(instance: dict[str, Any], schema: dict[str, Any]) -> Iterator[str]:
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    for name in instance:
        if name not in properties and not any(search(p, name) for p in patterns):
            yield name


def additional_properties(
    validator: Any, aP: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = set(_additional(instance, schema))
    if validator.is_type(aP, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], aP, path=extra)
    elif not aP and extras:
        joined = ", ".join(repr(e) for e in sorted(extras, key=str))
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({joined} {verb} unexpected)"
            )


def _evaluated(validator: Any, instance: Any, schema: Any, legacy: bool) -> list[str]:  # noqa: C901  (one branch per JSON Schema applicator keyword, as the spec lists them)
    """The property names ``schema`` evaluates (2020-12 rules; 2019-09's where ``legacy``)."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []

    def follow(resolved: Any) -> None:
        sub = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys.extend(_evaluated(sub, instance, resolved.contents, legacy))

    if "$ref" in schema:
        follow(validator._resolver.lookup(schema["$ref"]))
    if legacy and "$recursiveRef" in schema:
        follow(lookup_recursive_ref(validator._resolver))
    if not legacy and "$dynamicRef" in schema:
        follow(validator._resolver.lookup(schema["$dynamicRef"]))
    if legacy:
        for kw in ("properties", "additionalProperties", "unevaluatedProperties"):
            value = schema.get(kw)
            if value is True:
                keys += instance.keys()
            elif isinstance(value, dict):
                keys += [p for p in value if p in instance]
    else:
        if isinstance(schema.get("properties"), dict):
            keys += schema["properties"].keys() & instance.keys()
        for kw in ("additionalProperties", "unevaluatedProperties"):
            if (sub := schema.get(kw)) is not None:
                keys += [k for k, v in instance.items() if validator.evolve(schema=sub).is_valid(v)]
    for patrn in schema.get("patternProperties", {}):
        keys += [name for name in instance if search(patrn, name)]
    for name, sub in schema.get("dependentSchemas", {}).items():
        if name in instance:
            keys += _evaluated(validator, instance, sub, legacy)
    for kw in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(kw, []):
            if validator.evolve(schema=sub).is_valid(instance):
                keys += _evaluated(validator, instance, sub, legacy)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated(validator, instance, schema["if"], legacy)
            if "then" in schema:
                keys += _evaluated(validator, instance, schema["then"], legacy)
        elif "else" in schema:
            keys += _evaluated(validator, instance, schema["else"], legacy)
    return keys


def _unevaluated(legacy: bool) -> Any:
    def unevaluated_properties(
        validator: Any, uP: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = set(_evaluated(validator, instance, schema, legacy))
        bad = [
            name
            for name in instance
            if name not in evaluated
            and next(validator.descend(instance[name], uP, path=name, schema_path=name), None)
        ]
        if not bad:
            return
        joined = ", ".join(repr(e) for e in sorted(bad, key=str))
        verb = "was" if len(bad) == 1 else "were"
        if uP is False:
            yield ValidationError(
                f"Unevaluated properties are not allowed ({joined} {verb} unexpected)"
            )
        else:
            yield ValidationError(
                "Unevaluated properties are not valid under the given schema "
                f"({joined} {verb} unevaluated and invalid)"
            )

    return unevaluated_properties


def keywords(draft: str) -> dict[str, Any]:
    """The keyword implementations that replace ``jsonschema``'s in ``draft``."""
    found: dict[str, Any] = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
    }
    if draft in ("2019-09", "2020-12"):
        found["unevaluatedProperties"] = _unevaluated(legacy=draft == "2019-09")
    return found
