"""The base of the shared vocabulary's models: frozen, exact, and compact when recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


def _equals(default: Any) -> Callable[[Any], bool]:
    if default is None:
        return lambda v: v is None
    return lambda v: v == default


class _Compact(_Model):
    """A model that leaves its default-valued fields out when dumped: recorded steps stay small
    (an allow verdict is a few bytes), and reading it back restores the defaults.

    Each optional field is given an ``exclude_if`` (its default, compared) when the class is
    made, so pydantic's serializer leaves it out as it writes, in one pass: a serializer that
    dumped the model and then filtered the dict in Python cost about three times as much per
    model, and a recorded step dumps a dozen of them. A field's own ``exclude_if`` stands.
    """

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if not cls.__pydantic_fields_complete__:
            # A field whose annotation is resolved later is made again then, without the
            # exclude_if given it here: its default would be dumped after all.
            raise TypeError(
                f"{cls.__name__}: every annotation of a compact model must resolve where the "
                "class is defined (import the types it names before it)"
            )
        changed = False
        for f in cls.__pydantic_fields__.values():
            if f.is_required() or f.exclude_if is not None:
                continue
            f.exclude_if = _equals(f.get_default(call_default_factory=True))
            changed = True
        if changed:
            cls.model_rebuild(force=True)


__all__ = ["_Compact", "_Model"]
