"""The base of every model that crosses between workflow code and the worker."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Wire(BaseModel):
    """Frozen, no field it does not name, no infinity or NaN: what history records is exact."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


__all__ = ["Wire"]
