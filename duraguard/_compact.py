"""The base of the shared vocabulary's models: frozen, exact, and compact when recorded."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


class _Compact(_Model):
    """A model that leaves its default-valued fields out when dumped: recorded steps stay small
    (an allow verdict is a few bytes), and reading it back restores the defaults."""

    @model_serializer(mode="wrap")
    def _drop_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if type(data) is not dict:
            return data
        defaults = _defaults(type(self))
        out = {}
        for key, value in data.items():
            if key in defaults and value in defaults[key]:
                continue
            out[key] = value
        return out


_DEFAULTS: dict[type, dict[str, tuple[Any, ...]]] = {}


def _defaults(cls: type[BaseModel]) -> dict[str, tuple[Any, ...]]:
    """Per optional field, the forms its default takes once dumped (a tuple also as a list);
    worked out once per class, since a recorded step dumps many of these."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = {}
        for name, f in cls.model_fields.items():
            if not f.is_required():
                default = f.get_default(call_default_factory=True)
                found[name] = (default, list(default)) if isinstance(default, tuple) else (default,)
        _DEFAULTS[cls] = found
    return found


__all__ = ["_Compact", "_Model"]
