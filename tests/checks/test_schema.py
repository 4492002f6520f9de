"""schema(): a tool call's arguments against that tool's own input JSON Schema."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from duraguard import schema, tool
from duraguard.checks.schema import validator_for
from duraguard.engine import evaluate
from duraguard.errors import ConfigurationError
from duraguard.guardrail import Resources

ISSUE_CREDIT = {
    "type": "object",
    "properties": {"amount": {"type": "number"}},
    "required": ["amount"],
    "additionalProperties": False,
}

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"


async def _check(value: Any, input_schema: dict[str, Any], **settings: Any) -> Any:
    return await evaluate([schema(**settings)], value, tool="issue-credit", schema=input_schema)


async def test_schema_refuses_once_listing_every_failure_located_by_json_pointer() -> None:
    result = await _check({"reason": "duplicate"}, ISSUE_CREDIT)
    assert result.verdict.action == "deny"
    assert result.verdict.by == "schema"
    assert len(result.verdicts) == 1
    detections = {(d.rule, d.path) for d in result.verdict.detections}
    assert detections == {("schema.required", "#"), ("schema.additionalProperties", "#")}
    reason = result.verdict.reason or ""
    assert reason.startswith('arguments for tool "issue-credit" do not match its input schema - ')
    assert "#: 'amount' is a required property" in reason
    assert "#: Additional properties are not allowed ('reason' was unexpected)" in reason
    assert result.value is None


async def test_schema_lets_matching_arguments_through_unchanged() -> None:
    result = await _check({"amount": 12.5}, ISSUE_CREDIT)
    assert result.verdict.action == "allow"
    assert not result.replaced and result.value is None


async def test_schema_locates_a_nested_failure_by_its_pointer() -> None:
    order = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            }
        },
    }
    result = await _check({"items": [{"qty": "two"}, {"qty": 1}]}, order)
    assert [(d.rule, d.path) for d in result.verdict.detections] == [
        ("schema.type", "#/items/0/qty")
    ]
    assert "#/items/0/qty: 'two' is not of type 'integer'" in (result.verdict.reason or "")


async def test_schema_escapes_slash_and_tilde_in_pointer_segments() -> None:
    odd = {
        "type": "object",
        "properties": {"a/b": {"type": "object", "properties": {"c~d": {"type": "string"}}}},
    }
    result = await _check({"a/b": {"c~d": 1}}, odd)
    assert [d.path for d in result.verdict.detections] == ["#/a~1b/c~0d"]


async def test_schema_lets_a_tool_without_a_schema_through() -> None:
    result = await evaluate([schema()], {"anything": ["goes"]}, tool="no-schema")
    assert result.verdict.action == "allow"
    assert result.verdicts[0].by == "schema"


async def test_schema_reads_the_declared_tools_schema_from_the_worker() -> None:
    @tool(input_schema=ISSUE_CREDIT)
    def issue_credit(amount: float) -> None: ...

    resources = Resources(tools={"issue_credit": issue_credit})
    result = await evaluate([schema()], {"amount": "ten"}, tool="issue_credit", resources=resources)
    assert result.verdict.action == "deny"
    assert [d.path for d in result.verdict.detections] == ["#/amount"]


@pytest.mark.parametrize("args", [["amount", 5], "amount=5"])
async def test_schema_refuses_arguments_that_are_not_a_json_object(args: Any) -> None:
    result = await _check(args, ISSUE_CREDIT)
    assert result.verdict.action == "deny"
    assert ("schema.type", "#") in {(d.rule, d.path) for d in result.verdict.detections}


async def test_schema_action_can_be_set_to_observe() -> None:
    result = await _check({"reason": "duplicate"}, ISSUE_CREDIT, action="observe")
    assert result.verdict.action == "allow"
    assert result.verdicts[0].action == "observe"
    assert not result.replaced and result.value is None


# -- dialects ----------------------------------------------------------------------------------


async def test_the_schemas_own_draft_04_dialect_wins_over_the_fallback() -> None:
    below_ten = {"$schema": DRAFT_04, "type": "number", "maximum": 10, "exclusiveMaximum": True}
    at_limit = await _check(10, below_ten, draft="2020-12")
    under = await _check(9, below_ten, draft="2020-12")
    assert at_limit.verdict.action == "deny"
    assert at_limit.outcome == "complete"
    assert [d.rule for d in at_limit.verdict.detections] == ["schema.maximum"]
    assert under.verdict.action == "allow"


async def test_the_schemas_own_draft_07_dependencies_apply() -> None:
    card_needs_billing = {"type": "object", "dependencies": {"card": ["billing"]}}
    declared = await _check({"card": "x"}, {"$schema": DRAFT_07, **card_needs_billing})
    undeclared = await _check({"card": "x"}, card_needs_billing)  # 2020-12 ignores it
    assert declared.verdict.action == "deny"
    assert [d.rule for d in declared.verdict.detections] == ["schema.dependencies"]
    assert undeclared.verdict.action == "allow"


async def test_fallback_draft_4_reads_a_boolean_exclusive_minimum() -> None:
    positive = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    under_4 = await _check(0, positive, draft="4")
    assert under_4.verdict.action == "deny"
    assert under_4.outcome == "complete"
    assert [d.rule for d in under_4.verdict.detections] == ["schema.minimum"]
    assert (await _check(1, positive, draft="4")).verdict.action == "allow"


async def test_fallback_2020_12_finds_a_boolean_exclusive_minimum_malformed() -> None:
    positive = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    result = await _check(1, positive, draft="2020-12")
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"


@pytest.mark.parametrize(
    ("draft", "action"), [("7", "allow"), ("2019-09", "allow"), ("2020-12", "deny")]
)
async def test_prefix_items_counts_only_under_2020_12(draft: str, action: str) -> None:
    first_is_int = {"type": "array", "prefixItems": [{"type": "integer"}]}
    result = await _check(["one"], first_is_int, draft=draft)
    assert result.verdict.action == action


@pytest.mark.parametrize(
    ("draft", "outcome"), [("7", "complete"), ("2019-09", "complete"), ("2020-12", "partial")]
)
async def test_tuple_items_are_read_as_the_fallback_draft_says(draft: str, outcome: str) -> None:
    # An array under "items" is tuple validation up to 2019-09 and not a valid schema in 2020-12.
    first_is_int = {"type": "array", "items": [{"type": "integer"}]}
    result = await _check(["one"], first_is_int, draft=draft)
    assert result.verdict.action == "deny"
    assert result.outcome == outcome


def test_schema_draft_outside_the_supported_set_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        schema(draft="5")  # type: ignore[arg-type]
    message = str(info.value)
    assert "'schema'" in message
    for known in ("'4'", "'7'", "'2019-09'", "'2020-12'"):
        assert known in message


def test_schema_default_action_is_deny_and_draft_is_2020_12() -> None:
    spec = schema()
    assert spec.settings == {
        "draft": "2020-12",
        "action": "deny",
        "format_assertion": None,  # as the dialect says
        "registry": None,  # no other documents; never the network
        "pattern_timeout": 1.0,
    }
    assert spec.placements == ("tool-args",)


# -- validators and malformed schemas ----------------------------------------------------------


def test_validators_are_cached_for_an_equal_schema() -> None:
    same_in_other_order = {
        "additionalProperties": False,
        "required": ["amount"],
        "properties": {"amount": {"type": "number"}},
        "type": "object",
    }
    first = validator_for(ISSUE_CREDIT)
    assert validator_for(dict(ISSUE_CREDIT)) is first
    assert validator_for(same_in_other_order) is first
    assert validator_for(ISSUE_CREDIT, "7") is not first


def test_a_malformed_schema_is_refused_when_the_tool_is_declared() -> None:
    with pytest.raises(ConfigurationError) as info:

        @tool(input_schema={"type": "nope"})
        def broken(x: int) -> None: ...

    assert "not a valid JSON Schema" in str(info.value)
    assert "#/type" in str(info.value)


async def test_a_malformed_schema_inside_a_pass_refuses_with_outcome_partial() -> None:
    result = await _check({"amount": 1}, {"type": "nope"})
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert result.verdict.by == "schema"
    assert "not a valid JSON Schema" in (result.verdict.reason or "")


# -- boolean schemas, registries, format, ECMA patterns (issue 11) -----------------------------


def _subject_takes_boolean_schemas() -> bool:
    from pydantic import ValidationError

    from duraguard._types import Subject

    try:
        Subject(placement="tool-args", schema=False)  # type: ignore[arg-type]
    except ValidationError:
        return False
    return True


@pytest.mark.skipif(
    not _subject_takes_boolean_schemas(),
    reason="Subject.input_schema does not accept a boolean yet (requested of _types.py's owner)",
)
@pytest.mark.parametrize(("input_schema", "action"), [(True, "allow"), (False, "deny")])
async def test_evaluate_judges_a_boolean_schema(input_schema: bool, action: str) -> None:
    result = await evaluate([schema()], {"a": 1}, tool="t", schema=input_schema)  # type: ignore[arg-type]
    assert result.verdict.action == action
    assert result.outcome == "complete"


@pytest.mark.parametrize(("input_schema", "action"), [(True, "allow"), (False, "deny")])
async def test_a_tool_declared_with_a_boolean_schema_is_judged(
    input_schema: bool, action: str
) -> None:
    @tool(input_schema=input_schema)  # type: ignore[call-overload]
    def anything(**kw: Any) -> None: ...

    resources = Resources(tools={"anything": anything})
    result = await evaluate([schema()], {"x": 1}, tool="anything", resources=resources)
    assert result.verdict.action == action and result.outcome == "complete"


def test_check_schema_takes_booleans_and_refuses_other_types() -> None:
    from duraguard.checks.schema import check_schema

    check_schema(True)
    check_schema(False)
    with pytest.raises(ConfigurationError, match="a JSON object or a boolean; got list"):
        check_schema([])


async def test_a_registry_object_resolves_references_worker_side() -> None:
    from referencing import Registry, Resource

    money = Resource.from_contents(
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "number", "minimum": 0}
    )
    registry = Registry().with_resource("urn:example:money", money)
    resources = Resources(extra={"schemas": registry})
    ref = {"properties": {"amount": {"$ref": "urn:example:money"}}}
    guard = schema(registry="schemas")
    ok = await evaluate([guard], {"amount": 5}, tool="t", schema=ref, resources=resources)
    bad = await evaluate([guard], {"amount": -5}, tool="t", schema=ref, resources=resources)
    assert ok.verdict.action == "allow"
    assert bad.verdict.action == "deny" and bad.outcome == "complete"


async def test_an_unknown_document_is_refused_naming_the_ref_and_never_fetched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import urllib.request

    def no_network(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the schema guardrail reached for the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    result = await _check({"a": 1}, {"$ref": "https://schemas.example.com/x.json"})
    assert result.verdict.action == "deny" and result.outcome == "partial"
    reason = result.verdict.reason or ""
    assert "'https://schemas.example.com/x.json' ($ref)" in reason
    assert "nothing is fetched from the network" in reason
    assert [d.rule for d in result.verdict.detections] == ["schema.unresolvable"]


async def test_a_registry_name_the_worker_does_not_know_refuses() -> None:
    result = await _check({"a": 1}, {"type": "object"}, registry="nowhere")
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert "no schema registry named 'nowhere'" in (result.verdict.reason or "")


async def test_an_unknown_dialect_refuses_saying_how_to_register_it() -> None:
    result = await _check({"a": 1}, {"$schema": "https://example.com/my-dialect", "type": "object"})
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert "not a JSON Schema dialect this worker knows" in (result.verdict.reason or "")


@pytest.mark.parametrize(
    ("dialect", "setting", "asserted"),
    [
        (DRAFT_04, None, True),
        (DRAFT_07, None, True),
        ("https://json-schema.org/draft/2019-09/schema", None, False),
        ("https://json-schema.org/draft/2020-12/schema", None, False),
        ("https://json-schema.org/draft/2020-12/schema", True, True),
        (DRAFT_07, False, False),
    ],
)
async def test_format_is_asserted_as_the_dialect_or_the_setting_says(
    dialect: str, setting: bool | None, asserted: bool
) -> None:
    email = {"$schema": dialect, "properties": {"to": {"type": "string", "format": "email"}}}
    result = await _check({"to": "not an address"}, email, format_assertion=setting)
    assert (result.verdict.action == "deny") is asserted


def test_a_tool_schema_with_an_ecma_pattern_is_a_valid_schema() -> None:
    @tool(input_schema={"properties": {"name": {"type": "string", "pattern": "^\\p{Lu}\\p{L}*$"}}})
    def greet(name: str) -> None: ...

    assert greet.input_schema is not None


async def test_patterns_are_read_as_ecma_262() -> None:
    name = {"properties": {"name": {"type": "string", "pattern": "^\\p{Lu}\\p{Ll}+$"}}}
    assert (await _check({"name": "Émile"}, name)).verdict.action == "allow"
    refused = await _check({"name": "émile"}, name)
    assert refused.verdict.action == "deny" and refused.outcome == "complete"
    code = {"properties": {"code": {"pattern": "^[A-Z]{3}$"}}}
    assert (await _check({"code": "ABC\n"}, code)).verdict.action == "deny"  # $ is the very end


async def test_a_catastrophic_pattern_refuses_without_stalling_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    evil = {"properties": {"s": {"type": "string", "pattern": "^(a|a)*$"}}}
    tick = asyncio.create_task(ticker())
    try:
        result = await _check({"s": "a" * 64 + "!"}, evil, pattern_timeout=0.3)
    finally:
        tick.cancel()
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert "^(a|a)*$" in (result.verdict.reason or "")
    assert [d.rule for d in result.verdict.detections] == ["schema.pattern-timeout"]
    assert ticks > 1  # the loop ran while the pattern backtracked


def test_pattern_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="pattern_timeout"):
        schema(pattern_timeout=0)
