"""Walking JSON values: every string leaf with its JSON Pointer, and rebuilding with replacements."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer(parts: tuple[Any, ...]) -> str:
    return "#" + "".join(f"/{_escape(str(p))}" for p in parts)


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Yield ``(path, leaf)`` for every scalar in a JSON value, depth first, keys in order."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path, value


def transform(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Rebuild a JSON value with ``fn`` applied to every scalar leaf."""
    if isinstance(value, dict):
        return {k: transform(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [transform(v, fn) for v in value]
    return fn(value)


def text_of(value: Any) -> str:
    """All the text in a value, one leaf a line (for classifiers that read prose)."""
    if isinstance(value, str):
        return value
    return "\n".join(
        str(v)
        for _, v in leaves(value)
        if isinstance(v, str | int | float) and not isinstance(v, bool)
    )
