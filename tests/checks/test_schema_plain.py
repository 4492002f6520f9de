"""schema: the fast test for plain tool schemas never accepts what a validator would refuse.

Most tool schemas are only ``type``, ``properties``, ``required`` and ``additionalProperties``;
:func:`duraguard.checks.schema._plain` answers those in a few microseconds and hands anything
it cannot prove valid to the validator. Here thousands of generated schemas and values, in every
dialect it takes, are judged both ways: where the fast test says valid, every validator agrees.
"""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest

from duraguard.checks.schema import _plain, problems

DIALECTS = {
    "http://json-schema.org/draft-04/schema#": jsonschema.Draft4Validator,
    "http://json-schema.org/draft-06/schema#": jsonschema.Draft6Validator,
    "http://json-schema.org/draft-07/schema#": jsonschema.Draft7Validator,
    "https://json-schema.org/draft/2019-09/schema": jsonschema.Draft201909Validator,
    "https://json-schema.org/draft/2020-12/schema": jsonschema.Draft202012Validator,
}
TYPES = ["string", "number", "integer", "boolean", "null", "object", "array"]
NAMES = ["order_id", "amount", "to", "body", "tags", "x"]
ODD = [0, 1, -1, 1.0, 1.5, -0.0, float("nan"), True, False, None, "", "1", [], [1], {}, {"a": 1}]


def _schema(rng: random.Random, depth: int = 0) -> Any:
    if rng.random() < 0.1:
        return rng.choice([True, {}])
    s: dict[str, Any] = {}
    if rng.random() < 0.8:
        kinds = rng.sample(TYPES, rng.choice([1, 1, 1, 2]))
        s["type"] = kinds[0] if len(kinds) == 1 else kinds
    if depth < 2 and (s.get("type") in (None, "object") or rng.random() < 0.3):
        props = {n: _schema(rng, depth + 1) for n in rng.sample(NAMES, rng.randint(0, 3))}
        s["properties"] = props
        if props and rng.random() < 0.6:
            s["required"] = rng.sample(sorted(props), rng.randint(1, len(props)))
        if rng.random() < 0.5:
            s["additionalProperties"] = rng.random() < 0.5
    if rng.random() < 0.3:
        s["description"] = "what it is"
    return s


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.45:
        return {n: _value(rng, depth + 1) for n in rng.sample(NAMES, rng.randint(0, 4))}
    if roll < 0.5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    return rng.choice(ODD)


@pytest.mark.no_cover  # CPU-bound, covered elsewhere: not traced
def test_what_the_fast_test_accepts_every_validator_accepts() -> None:
    rng = random.Random(20261201)
    accepted = refused = 0
    for _ in range(1500):
        schema = _schema(rng)
        test = _plain(schema)
        assert test is not None, schema  # every generated schema is plain
        for uri, cls in DIALECTS.items():
            whole = {"$schema": uri, **schema} if isinstance(schema, dict) else schema
            try:
                cls.check_schema(whole)  # (problems() checks the schema before the fast test)
            except jsonschema.SchemaError:
                continue  # draft 4 has no boolean schemas
            validator = cls(whole)
            for _ in range(6):
                value = _value(rng)
                if _plain(whole)(value):  # type: ignore[misc]
                    accepted += 1
                    assert validator.is_valid(value), (whole, value)
                else:
                    refused += 1
    # Both sides were exercised: the property is not vacuous.
    assert accepted > 5000 and refused > 5000


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"type": "integer", "minimum": 0},
        {"enum": [1, 2]},
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"properties": {"a": {"type": "string", "format": "email"}}},
        {"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}},
        {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"},
        {"additionalProperties": {"type": "string"}},
        {"type": "decimal"},
        {"properties": {"a": False}},
        False,
    ],
)
def test_anything_beyond_the_plain_keywords_goes_to_the_validator(schema: Any) -> None:
    assert _plain(schema) is None


def test_an_invalid_value_of_a_plain_schema_gets_the_validators_own_messages() -> None:
    schema = {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
        "additionalProperties": False,
    }
    assert problems(schema, {"order_id": "A1", "amount": 20}) == []
    assert problems(schema, {"order_id": "A1", "amount": True, "note": "x"}) == [
        (
            "#",
            "additionalProperties",
            "Additional properties are not allowed ('note' was unexpected)",
        ),
        ("#/amount", "type", "True is not of type 'number'"),
    ]
    # An integral float is an integer in draft 6 and later, not in draft 4: the validator says.
    integer = {"type": "integer"}
    assert problems(integer, 1.0) == []
    assert problems({"$schema": "http://json-schema.org/draft-04/schema#", **integer}, 1.0) != []
