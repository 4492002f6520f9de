"""``schema``: a tool call's arguments against that tool's own input JSON Schema."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import SchemaError

from .._types import Action, Detection, Subject, Verdict, canonical_json
from ..errors import ConfigurationError
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from ._text import pointer

Draft = Literal["4", "7", "2019-09", "2020-12"]

_DRAFTS: dict[str, type[Any]] = {
    "4": jsonschema.Draft4Validator,
    "7": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}


@lru_cache(maxsize=512)
def _validator(schema_json: str, draft: str) -> Any:
    import json

    schema = json.loads(schema_json)
    cls = (
        validators.validator_for(schema, default=_DRAFTS[draft])
        if isinstance(schema, dict)
        else _DRAFTS[draft]
    )
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        where = pointer(tuple(err.path))
        raise ConfigurationError(
            f"the tool's input schema is not a valid JSON Schema at {where}: {err.message}"
        ) from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def validator_for(schema: dict[str, Any], draft: str = "2020-12") -> Any:
    """The cached validator for ``schema`` (its own ``$schema`` dialect, else ``draft``)."""
    return _validator(canonical_json(schema), draft)


def check_schema(schema: Any, draft: str = "2020-12") -> None:
    """Raise :class:`ConfigurationError` where ``schema`` is not a valid JSON Schema."""
    if not isinstance(schema, dict | bool):
        raise ConfigurationError(
            f"an input schema must be a JSON object; got {type(schema).__name__}"
        )
    if isinstance(schema, dict):
        validator_for(schema, draft)


def problems(
    schema: dict[str, Any], value: Any, draft: str = "2020-12"
) -> list[tuple[str, str, str]]:
    """Every failing keyword as ``(pointer, keyword, message)``, in document order."""
    v = validator_for(schema, draft)
    found = [
        (pointer(tuple(e.absolute_path)), str(e.validator), e.message) for e in v.iter_errors(value)
    ]
    found.sort(key=lambda t: (t[0], t[1], t[2]))
    return found


class SchemaSettings(Settings):
    draft: Draft = "2020-12"
    """The dialect for a schema that declares none (its own ``$schema`` always wins)."""
    action: Action = "deny"


class SchemaGuardrail(Guardrail):
    """Refuses arguments that do not match the tool's input schema, naming every failure."""

    def __init__(self, settings: SchemaSettings, resources: Resources) -> None:
        self.settings = settings
        self.resources = resources

    async def check(self, subject: Subject) -> Verdict:
        schema = subject.input_schema or self.resources.tool_schema(subject.tool)
        if schema is None:
            return Verdict.allow()  # nothing to check it against
        found = problems(schema, subject.value, self.settings.draft)
        if not found:
            return Verdict.allow()
        tool = subject.tool or "value"
        listed = "; ".join(f"{where}: {msg}" for where, _, msg in found)
        return Verdict(
            action=self.settings.action,
            reason=f'arguments for tool "{tool}" do not match its input schema - {listed}',
            detections=tuple(Detection(rule=f"schema.{kw}", path=where) for where, kw, _ in found),
            check="schema",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return SchemaGuardrail(SchemaSettings(**spec.settings), resources)


KIND = register_kind(
    Kind("schema", SchemaSettings, _build, placements=("tool-args",), reads_session=False)
)


def schema(
    *,
    draft: Draft = "2020-12",
    action: Action = "deny",
    name: str | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Check tool arguments against the tool's input schema (default action ``deny``).

    Args:
        draft: The JSON Schema dialect for a schema with no ``$schema``: 4, 7, 2019-09, 2020-12.
        action: What a mismatch does; ``deny`` lets the model correct itself next turn.
    """
    return KIND.spec(name=name, timeout=timeout, draft=draft, action=action)
