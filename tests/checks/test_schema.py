"""schema(): a tool call's arguments against that tool's own input JSON Schema."""

from __future__ import annotations

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
    assert spec.settings == {"draft": "2020-12", "action": "deny"}
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
