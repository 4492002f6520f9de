"""The fast path of :func:`duraguard.checks.schema.problems`: a test for the simplest schemas.

A schema made only of ``type``, ``properties``, ``required``, a boolean
``additionalProperties`` and annotations gets a plain-Python test (:func:`_plain`) that says
``True`` only for a value every JSON Schema dialect accepts; anything else, and any value that
test does not accept, goes to the validator. Worked out once per schema object
(:func:`_plain_test`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_PLAIN_SIZE = 512
_LOCK = threading.Lock()

_PLAIN_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description", "default",
     "examples", "$comment"}
)  # fmt: skip
_PLAIN_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    # A bool is not a number in JSON Schema; an integral float is an integer in some dialects
    # and not in others, so only an int is taken here (anything else goes to the validator).
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_PLAIN_DIALECTS = frozenset(
    f"{base}{tail}"
    for base in (
        "http://json-schema.org/draft-04/schema", "http://json-schema.org/draft-06/schema",
        "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    )
    for tail in ("", "#")
)  # fmt: skip
"""Dialects in which those keywords mean the same (draft 3's ``required`` does not)."""
_PLAIN: OrderedDict[int, tuple[Any, Callable[[Any], bool] | None]] = OrderedDict()


def _plain(schema: Any, *, root: bool = True) -> Callable[[Any], bool] | None:  # noqa: C901  (one branch per keyword the fast path must refuse to guess at)
    """For a schema made only of ``type``, ``properties``, ``required`` and a boolean
    ``additionalProperties`` (and annotations), a test that says ``True`` only for a value every
    JSON Schema dialect accepts; ``None`` for any other schema. Most tool schemas are this
    simple, and the validator costs tens of microseconds a call where this costs a few."""
    if schema is True or schema == {}:
        return lambda v: True
    if not isinstance(schema, dict):
        return None
    if "$schema" in schema:
        if not root or schema["$schema"] not in _PLAIN_DIALECTS:
            return None
        schema = {k: v for k, v in schema.items() if k != "$schema"}
    if not schema.keys() <= _PLAIN_KEYWORDS:
        return None
    kinds = schema.get("type")
    names = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else None
    if kinds is not None and (not names or any(k not in _PLAIN_TYPES for k in names)):
        return None
    type_ok = [_PLAIN_TYPES[k] for k in names] if names else None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list) or not isinstance(extra, bool):
        return None
    if not all(isinstance(r, str) for r in required):
        return None
    tests: dict[str, Callable[[Any], bool]] = {}
    for name, sub in props.items():
        test = _plain(sub, root=False)
        if test is None:
            return None
        tests[name] = test
    needed = tuple(required)

    def ok(v: Any) -> bool:
        if type_ok is not None and not any(t(v) for t in type_ok):
            return False
        if not isinstance(v, dict):
            return True  # properties, required and additionalProperties judge objects only
        if any(r not in v for r in needed):
            return False
        for key, item in v.items():
            test = tests.get(key)
            if test is None:
                if not extra:
                    return False
            elif not test(item):
                return False
        return True

    return ok


def _plain_test(schema: Any) -> Callable[[Any], bool] | None:
    """:func:`_plain` of a tool's schema, worked out once per schema object."""
    if not isinstance(schema, dict):
        return _plain(schema)
    hit = _PLAIN.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    test = _plain(schema)
    with _LOCK:
        _PLAIN[id(schema)] = (schema, test)  # holds the schema: its id is not reused
        if len(_PLAIN) > _PLAIN_SIZE:
            _PLAIN.popitem(last=False)
    return test


__all__: list[str] = ["_plain", "_plain_test"]
