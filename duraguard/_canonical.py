"""Canonical JSON and the digests over it: what a signature or an activity id binds a value by.

Only plain JSON has a canonical form here; anything else raises :class:`NotJSON` rather than be
stringified, so two different values never share a digest.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Any

from ._sandboxed import refuse_sandboxed_import

refuse_sandboxed_import()  # every duraguard module imports this one first


class NotJSON(TypeError):
    """A value that is not plain JSON, so it has no canonical form to digest or sign."""


def _check_json(value: Any, where: str = "#") -> None:
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise NotJSON(f"{where} is {value!r}, which JSON cannot carry")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise NotJSON(
                    f"{where} has the key {k!r} ({type(k).__name__}); JSON object keys are strings"
                )
            _check_json(v, f"{where}/{k}")
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_json(v, f"{where}/{i}")
        return
    raise NotJSON(
        f"{where} is a {type(value).__name__}, not JSON (objects, arrays, strings, numbers, "
        "true/false, null); convert it first, e.g. with model_dump(mode='json')"
    )


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})


def _not_json(value: Any) -> Any:
    raise TypeError("not JSON")


def _string_keys(value: Any) -> bool:
    """Whether every object key in ``value`` (already encoded by :mod:`json`) is a ``str``: the
    encoder turns ``1`` into ``"1"``, and a canonical form must not be shared by two values.
    ``False`` also for a subclass of a container (the careful walk then decides)."""
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or (type(v) in _CONTAINERS and not _string_keys(v)):
                return False
        return True
    if t is list or t is tuple:
        for v in value:
            if type(v) in _CONTAINERS and not _string_keys(v):
                return False
        return True
    return t in _SCALARS


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the form every digest and signature is taken over.

    Raises:
        NotJSON: ``value`` is not plain JSON. Nothing is stringified: two different values
            never share a canonical form.
    """
    try:
        # The C encoder refuses what is not JSON (NaN too); only the keys need a second look.
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
            default=_not_json,
        )  # fmt: skip
        if _string_keys(value):
            return text
    except (TypeError, ValueError, RecursionError):
        pass
    _check_json(value)  # says exactly what is wrong, or accepts subclasses of str, dict, list
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """SHA-256 hex of the canonical JSON of ``value`` (raises :class:`NotJSON` for others)."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def subject_digest(placement: str, tool: str | None, canonical_value: str) -> str:
    """:meth:`Subject.digest` from the value's canonical JSON, for a caller that has it already:
    ``sha256(canonical_json({"p": placement, "t": tool, "v": value}))``."""
    text = f'{{"p":{_quoted(placement)},"t":{_quoted(tool)},"v":{canonical_value}}}'
    return hashlib.sha256(text.encode()).hexdigest()


@lru_cache(maxsize=4096)
def _quoted(name: str | None) -> str:
    """A placement's or tool's name as JSON (a few names, quoted once each)."""
    return json.dumps(name, ensure_ascii=False)


def call_digest(tool: str | None, args: Any) -> str:
    """What a person's yes is bound to: the tool and its canonical arguments."""
    return digest({"tool": tool, "args": args})
