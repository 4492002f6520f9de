"""JSON Schema keywords whose stock ``jsonschema`` implementations take time in the square of
the instance, written to take linear time (same meaning, same messages).

* ``uniqueItems`` compares every pair of items when they cannot be sorted (objects, or numbers
  mixed with strings): 8,000 small objects took 54 s. Here each item is reduced to a hashable
  form that is equal exactly where JSON Schema says two values are equal (``1`` and ``1.0``
  are, ``true`` and ``1`` are not, objects compare as key sets), and a set finds a repeat.
* ``unevaluatedItems`` looked each index up in a list of the evaluated ones; here in a set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import _legacy_keywords, _utils
from jsonschema.exceptions import ValidationError

from .._deadline import spend


def _same(value: Any) -> Any:
    """A hashable form of a JSON value, equal for values JSON Schema deems equal."""
    if value is True or value is False:
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)  # 1 == 1.0, and they hash alike
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, dict):
        return ("object", frozenset((k, _same(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_same(v) for v in value))
    return ("other", repr(value))


def unique_items(validator: Any, uI: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not uI or not validator.is_type(instance, "array"):
        return
    spend(len(instance))
    seen: set[Any] = set()
    for item in instance:
        form = _same(item)
        if form in seen:
            yield ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(form)


_Finder = Callable[[Any, Any, Any], list[int]]


def _unevaluated_items(find: _Finder) -> Any:
    def unevaluated_items(
        validator: Any, uI: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "array"):
            return
        spend(len(instance))
        evaluated = set(find(validator, instance, schema))
        unevaluated = [item for i, item in enumerate(instance) if i not in evaluated]
        if unevaluated:
            error = "Unevaluated items are not allowed (%s %s unexpected)"
            yield ValidationError(error % _utils.extras_msg(unevaluated))

    return unevaluated_items


def keywords(draft: str) -> dict[str, Any]:
    """The keyword implementations that replace ``jsonschema``'s in ``draft``."""
    found: dict[str, Any] = {"uniqueItems": unique_items}
    if draft == "2019-09":
        found["unevaluatedItems"] = _unevaluated_items(
            _legacy_keywords.find_evaluated_item_indexes_by_schema
        )
    elif draft == "2020-12":
        found["unevaluatedItems"] = _unevaluated_items(_utils.find_evaluated_item_indexes_by_schema)
    return found
