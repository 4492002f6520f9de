"""``schema``: a tool call's arguments against that tool's own input JSON Schema.

* **Dialect.** A schema's own ``$schema`` wins; ``draft`` is the fallback (4, 6, 7, 2019-09,
  2020-12). A ``$schema`` naming a custom meta-schema is read through the registry.
* **Boolean schemas** (``true``/``false``, valid since draft 6) are judged like any other.
* **References** to other documents resolve only against a registry of documents lent by the
  worker (``Resources.extra[<registry>]``: a ``referencing.Registry`` or a mapping of URI to
  schema); nothing is fetched from the network, and a ``$ref`` to an unknown document refuses
  (deny, outcome partial) naming the ``$ref``.
* **format** is asserted as the dialect says unless ``format_assertion`` says otherwise:
  asserted in drafts 4, 6 and 7; an annotation in 2019-09 and 2020-12, unless the schema's
  meta-schema requires the 2020-12 format-assertion vocabulary.
* **Patterns** are ECMA-262 (``\\p{L}`` works, ``$`` is the very end) and each search is bounded
  by ``pattern_timeout``: a catastrophic pattern refuses (deny, partial), the worker never stalls.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Literal

import jsonschema
import referencing.exceptions
from attrs import fields
from jsonschema import validators
from jsonschema.exceptions import SchemaError
from pydantic import Field
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .._deadline import spend
from .._types import Action, Detection, Subject, Verdict, canonical_json
from ..errors import ConfigurationError
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from . import _keywords, _patterns
from ._schema_plain import _plain as _plain  # re-exported: tests reach the fast path here
from ._schema_plain import _plain_test
from ._text import OFFLOAD_CHARS, pointer, text_size

Draft = Literal["4", "6", "7", "2019-09", "2020-12"]

_DRAFTS: dict[str, type[Any]] = {
    "3": jsonschema.Draft3Validator,
    "4": jsonschema.Draft4Validator,
    "6": jsonschema.Draft6Validator,
    "7": jsonschema.Draft7Validator,
    "2019-09": jsonschema.Draft201909Validator,
    "2020-12": jsonschema.Draft202012Validator,
}
_DIALECT_OF = {cls: name for name, cls in _DRAFTS.items()}
_BY_URI = {cls.META_SCHEMA["$schema"].rstrip("#"): cls for cls in _DRAFTS.values()}
_ASSERTING = frozenset({"3", "4", "6", "7"})
FORMAT_ASSERTION_VOCAB = "https://json-schema.org/draft/2020-12/vocab/format-assertion"
_EMPTY = Registry()  # never retrieves: an unknown $ref refuses instead of reaching the network


def _dialect(schema: Any, default: type[Any], registry: Registry) -> tuple[type[Any], Any]:
    """``(stock validator class, meta-schema contents or None)`` for ``schema``'s ``$schema``."""
    uri = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(uri, str):
        return default, None
    found = _BY_URI.get(uri.rstrip("#"))
    if found is not None:
        return found, None
    try:
        meta = registry.contents(uri)
    except referencing.exceptions.NoSuchResource:
        raise ConfigurationError(
            f"the schema's $schema {uri!r} is not a JSON Schema dialect this worker knows; use a "
            "standard one (draft 4, 6, 7, 2019-09, 2020-12) or register that meta-schema in the "
            "schema guardrail's registry"
        ) from None
    base = _BY_URI.get(str(meta.get("$schema", "")).rstrip("#")) if isinstance(meta, dict) else None
    if base is None:
        raise ConfigurationError(f"the meta-schema {uri!r} is not built on a known dialect")
    return base, meta


_ECMA: dict[type[Any], type[Any]] = {}


def _ecma(stock: type[Any]) -> type[Any]:
    """``stock`` with ECMA-262 patterns (bounded in time), staying so across dialect switches."""
    if stock in _ECMA.values():
        return stock
    if stock not in _ECMA:
        dialect = _DIALECT_OF.get(stock, "2020-12")
        cls = validators.extend(
            stock, {**_patterns.keywords(dialect), **_keywords.keywords(dialect)}
        )
        descend = cls.descend

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            spend()  # one subschema on one part of the value: a deadline can stop between them
            yield from descend(self, *args, **kwargs)

        cls.descend = counted

        def evolve(self: Any, **changes: Any) -> Any:
            schema = changes.setdefault("schema", self.schema)
            new = _ecma(_dialect(schema, type(self), self._registry)[0])
            for f in fields(type(self)):
                if f.init and f.alias not in changes:
                    changes[f.alias] = getattr(self, f.name)
            return new(**changes)

        cls.evolve = evolve
        _ECMA[stock] = cls
    return _ECMA[stock]


def _format_checker(stock: type[Any]) -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker()
    checker.checkers = dict(stock.FORMAT_CHECKER.checkers)
    checker.checks("regex")(_patterns.is_valid)  # ECMA-262, not Python's re
    return checker


def _asserts_format(dialect: str, meta: Any, setting: bool | None) -> bool:
    if setting is not None:
        return setting
    vocab = meta.get("$vocabulary", {}) if isinstance(meta, dict) else {}
    return dialect in _ASSERTING or vocab.get(FORMAT_ASSERTION_VOCAB) is True


def _make(schema: Any, draft: str, format_assertion: bool | None, registry: Registry) -> Any:
    stock, meta = _dialect(schema, _DRAFTS[draft], registry)
    dialect = _DIALECT_OF[stock]
    try:
        stock.check_schema(schema, format_checker=_format_checker(stock))
    except SchemaError as err:
        where = pointer(tuple(err.path))
        raise ConfigurationError(
            f"the tool's input schema is not a valid JSON Schema at {where}: {err.message}"
        ) from None
    checker = _format_checker(stock) if _asserts_format(dialect, meta, format_assertion) else None
    return _ecma(stock)(schema, registry=registry, format_checker=checker)


_CACHE: OrderedDict[tuple[str, str, bool | None, int], tuple[Registry, Any, bool]] = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()
_TEXT: OrderedDict[int, tuple[dict[str, Any], str]] = OrderedDict()


def _cached(
    schema: dict[str, Any] | bool, draft: str, format_assertion: bool | None, registry: Registry
) -> tuple[Any, bool]:
    """``(validator, whether the schema has patterns)``, built once per equal schema.

    A tool's schema is the same object on every call (the catalogue keeps it): its canonical
    form is remembered by identity, so the warm path costs a lookup, not a serialisation.
    Schemas are treated as immutable once given to a tool.
    """
    seen = _TEXT.get(id(schema)) if isinstance(schema, dict) else None
    text = seen[1] if seen is not None and seen[0] is schema else canonical_json(schema)
    if isinstance(schema, dict) and seen is None:
        with _LOCK:
            _TEXT[id(schema)] = (schema, text)  # holds the schema: its id is not reused
            if len(_TEXT) > _CACHE_SIZE:
                _TEXT.popitem(last=False)
    key = (text, draft, format_assertion, id(registry))
    with _LOCK:  # checks with patterns build validators in threads too
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is registry:
            _CACHE.move_to_end(key)
            return hit[1], hit[2]
    made = _make(json.loads(key[0]), draft, format_assertion, registry)
    patterned = '"pattern' in key[0]
    with _LOCK:
        # The registry is held so its id cannot be reused while the entry lives.
        _CACHE[key] = (registry, made, patterned)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return made, patterned


def validator_for(
    schema: dict[str, Any] | bool,
    draft: str = "2020-12",
    *,
    format_assertion: bool | None = None,
    registry: Registry | None = None,
) -> Any:
    """The cached validator for ``schema`` (its own ``$schema`` dialect, else ``draft``)."""
    return _cached(schema, draft, format_assertion, registry or _EMPTY)[0]


def check_schema(schema: Any, draft: str = "2020-12", *, registry: Registry | None = None) -> None:
    """Raise :class:`ConfigurationError` where ``schema`` is not a valid JSON Schema."""
    if not isinstance(schema, dict | bool):
        raise ConfigurationError(
            f"an input schema must be a JSON object or a boolean; got {type(schema).__name__}"
        )
    validator_for(schema, draft, registry=registry)


def problems(
    schema: dict[str, Any] | bool,
    value: Any,
    draft: str = "2020-12",
    *,
    format_assertion: bool | None = None,
    registry: Registry | None = None,
    pattern_timeout: float = 1.0,
) -> list[tuple[str, str, str]]:
    """Every failing keyword as ``(pointer, keyword, message)``, in document order.

    Raises:
        ConfigurationError: the schema is not valid, or names an unknown dialect.
        referencing.exceptions.Unresolvable: a ``$ref`` the registry does not hold.
        duraguard.checks._patterns.PatternTimeout: a pattern ran out of ``pattern_timeout``.
    """
    v = validator_for(schema, draft, format_assertion=format_assertion, registry=registry)
    plain = _plain_test(schema)
    if plain is not None and plain(value):
        return []  # (the validator above has checked the schema itself)
    with _patterns.deadline(pattern_timeout):
        errors = list(v.iter_errors(value))
    found = [(pointer(tuple(e.absolute_path)), str(e.validator), e.message) for e in errors]
    found.sort(key=lambda t: (t[0], t[1], t[2]))
    return found


def as_registry(found: Any, key: str) -> Registry:
    """A ``referencing.Registry`` from what the worker lent: a registry or ``{uri: schema}``."""
    if isinstance(found, Registry):
        return found
    if isinstance(found, Mapping) and all(isinstance(k, str) for k in found):
        return Registry().with_resources(
            (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
            for uri, doc in found.items()
        )
    raise ConfigurationError(
        f"Resources.extra[{key!r}] must be a referencing.Registry or a mapping of URI to schema "
        f"for the schema guardrail; got {type(found).__name__}"
    )


class SchemaSettings(Settings):
    """What ``schema(...)`` was given: the draft for a schema that names none, what a mismatch does."""

    draft: Draft = "2020-12"
    """The dialect for a schema that declares none (its own ``$schema`` always wins)."""
    action: Action = "deny"
    format_assertion: bool | None = None
    """Assert ``format`` (True), treat it as an annotation (False), or as the dialect says."""
    registry: str | None = None
    """The key in ``Resources.extra`` of the documents ``$ref`` may reach (none by default)."""
    pattern_timeout: float = Field(default=1.0, gt=0)
    """Seconds all pattern searches of one check may take together before it refuses."""


class SchemaGuardrail(Guardrail):
    """Refuses arguments that do not match the tool's input schema, naming every failure."""

    def __init__(self, settings: SchemaSettings, resources: Resources) -> None:
        self.settings = settings
        self.resources = resources
        self.registry: Registry | None = None
        if settings.registry is not None:
            if settings.registry not in resources.extra:
                raise ConfigurationError(
                    f"no schema registry named {settings.registry!r} is registered on this "
                    f"worker; pass DuraguardPlugin(extra={{{settings.registry!r}: registry}})"
                )
            self.registry = as_registry(resources.extra[settings.registry], settings.registry)

    def _problems(self, schema: dict[str, Any] | bool, value: Any) -> list[tuple[str, str, str]]:
        s = self.settings
        return problems(
            schema,
            value,
            s.draft,
            format_assertion=s.format_assertion,
            registry=self.registry,
            pattern_timeout=s.pattern_timeout,
        )

    async def check(self, subject: Subject) -> Verdict:
        schema: Any = subject.input_schema
        if schema is None:
            schema = self.resources.tool_schema(subject.tool)
        if schema is None:
            return Verdict.allow()  # nothing to check it against
        tool = subject.tool or "value"
        s = self.settings
        try:
            _, patterned = _cached(schema, s.draft, s.format_assertion, self.registry or _EMPTY)
            # A pattern may backtrack for up to pattern_timeout, and a big value takes time in
            # proportion: either is judged off the loop (the deadline goes along).
            if patterned or text_size(subject.value, OFFLOAD_CHARS) >= OFFLOAD_CHARS:
                found = await asyncio.to_thread(self._problems, schema, subject.value)
            else:
                found = self._problems(schema, subject.value)
        except referencing.exceptions.Unresolvable as err:
            return _unable(
                f"the input schema of {tool!r} {_unresolved(err)}", "schema.unresolvable"
            )
        except _patterns.PatternTimeout as err:
            return _unable(str(err), "schema.pattern-timeout")
        if not found:
            return Verdict.allow()
        listed = "; ".join(f"{where}: {msg}" for where, _, msg in found)
        return Verdict(
            action=self.settings.action,
            reason=f'arguments for tool "{tool}" do not match its input schema - {listed}',
            detections=tuple(Detection(rule=f"schema.{kw}", path=where) for where, kw, _ in found),
            check="schema",
        )


def _unresolved(err: referencing.exceptions.Unresolvable) -> str:
    cause = err.__cause__ or err  # jsonschema wraps referencing's error, raised from it
    if isinstance(
        cause, referencing.exceptions.PointerToNowhere | referencing.exceptions.NoSuchAnchor
    ):
        return f"refers to {err.ref!r} ($ref), which points nowhere in the schema; fix the $ref"
    return (
        f"refers to {err.ref!r} ($ref), a document that is not in its registry; register it "
        "(schema(registry=...) naming a Resources.extra entry) - nothing is fetched from the network"
    )


def _unable(reason: str, rule: str) -> Verdict:
    return Verdict(
        action="deny",
        outcome="partial",
        reason=reason,
        detections=(Detection(rule=rule),),
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
    format_assertion: bool | None = None,
    registry: str | None = None,
    pattern_timeout: float = 1.0,
    name: str | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Check tool arguments against the tool's input schema (default action ``deny``).

    Args:
        draft: The JSON Schema dialect for a schema with no ``$schema``: 4, 6, 7, 2019-09, 2020-12.
        action: What a mismatch does; ``deny`` lets the model correct itself next turn.
        format_assertion: ``True`` asserts ``format``, ``False`` never does; ``None`` (default)
            does what the dialect says (asserted up to draft 7, an annotation from 2019-09).
        registry: The key in ``Resources.extra`` (``DuraguardPlugin(extra={...})``) of the
            documents a ``$ref`` may reach: a ``referencing.Registry`` or ``{uri: schema}``.
        pattern_timeout: Seconds all ``pattern`` searches of one check may take together;
            beyond it the check refuses (deny, partial) instead of stalling on a ReDoS.
    """
    return KIND.spec(
        name=name,
        timeout=timeout,
        draft=draft,
        action=action,
        format_assertion=format_assertion,
        registry=registry,
        pattern_timeout=pattern_timeout,
    )
