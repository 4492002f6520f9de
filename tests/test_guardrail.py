"""The Guardrail port and its spec: names, placements, timeouts, and the wire form."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from duraguard import Guardrail, GuardrailSpec, Subject, Verdict, guardrail, moderation, pii, schema
from duraguard.errors import ConfigurationError, UnknownGuardrail
from duraguard.guardrail import Resources, build, get_kind, to_spec, to_specs


class HouseRule(Guardrail):
    name = "house-rule"
    placements = frozenset({"tool-args"})

    async def check(self, subject: Subject) -> Verdict:
        return Verdict.allow()


def test_an_unknown_kind_names_the_known_kinds() -> None:
    with pytest.raises(UnknownGuardrail) as info:
        get_kind("pi")
    message = str(info.value)
    assert message.startswith("unknown guardrail kind 'pi'; known: ")
    known = message.removeprefix("unknown guardrail kind 'pi'; known: ").split(", ")
    assert known == sorted(known)
    assert {"custom", "moderation", "pii", "schema"} <= set(known)


def test_building_a_spec_of_an_unknown_kind_raises_unknown_guardrail() -> None:
    with pytest.raises(UnknownGuardrail, match="unknown guardrail kind 'pi'"):
        build(GuardrailSpec(kind="pi", name="pi"), Resources())


def test_building_an_unregistered_custom_guardrail_says_how_to_register_it() -> None:
    with pytest.raises(UnknownGuardrail) as info:
        build(HouseRule().spec(), Resources())
    assert "no custom guardrail named 'house-rule'" in str(info.value)
    assert "DuraguardPlugin(guardrails=[...])" in str(info.value)


def test_unknown_guardrail_is_a_configuration_error() -> None:
    assert issubclass(UnknownGuardrail, ConfigurationError)
    assert issubclass(ConfigurationError, ValueError)


def test_two_guardrails_with_one_name_in_a_list_are_refused() -> None:
    with pytest.raises(ConfigurationError) as info:
        to_specs([pii(), schema(), pii(action="deny")])
    assert "two guardrails are named 'pii'" in str(info.value)
    assert "name=..." in str(info.value)


def test_the_same_kind_twice_is_fine_under_distinct_names() -> None:
    specs = to_specs([pii(), pii(name="pii-strict", action="deny")])
    assert [s.name for s in specs] == ["pii", "pii-strict"]


def test_to_spec_refuses_a_plain_function_and_says_to_use_the_decorator() -> None:
    def my_check(subject: Subject) -> bool:
        return True

    with pytest.raises(ConfigurationError) as info:
        to_spec(my_check)
    assert "got function" in str(info.value)
    assert "@duraguard.guardrail" in str(info.value)


def test_to_spec_names_a_guardrail_instance_as_custom() -> None:
    spec = to_spec(HouseRule())
    assert (spec.kind, spec.name, spec.placements) == ("custom", "house-rule", ("tool-args",))


def test_a_decorated_function_becomes_a_custom_spec_named_after_it() -> None:
    @guardrail(placements=["tool-args", "egress"], timeout=2.5)
    def no_external_hosts(subject: Subject) -> bool:
        return True

    spec = to_spec(no_external_hosts)
    assert spec.kind == "custom"
    assert spec.name == "no-external-hosts"
    assert set(spec.placements) == {"tool-args", "egress"}
    assert spec.timeout == 2.5


def test_an_unknown_placement_on_a_kind_is_a_configuration_error_listing_placements() -> None:
    with pytest.raises(ConfigurationError) as info:
        pii(placements=["tool_args"])
    assert "unknown placement 'tool_args'" in str(info.value)
    assert "tool-args" in str(info.value)


def test_an_unknown_placement_on_a_decorated_function_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown placement 'tool_args'"):

        @guardrail(placements=["tool_args"])  # type: ignore[list-item]
        def typo(subject: Subject) -> bool:
            return True


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_a_timeout_that_is_not_positive_is_a_configuration_error(timeout: float) -> None:
    with pytest.raises(ConfigurationError, match="must be > 0 seconds"):
        moderation(timeout=timeout)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_a_decorated_function_with_a_timeout_that_is_not_positive_is_refused(
    timeout: float,
) -> None:
    with pytest.raises(ConfigurationError, match="must be > 0 seconds"):

        @guardrail(timeout=timeout)
        def instant(subject: Subject) -> bool:
            return True


def test_bad_settings_name_the_kind_and_the_field() -> None:
    with pytest.raises(ConfigurationError) as info:
        pii(action="explode")  # type: ignore[arg-type]
    assert "bad settings for guardrail kind 'pii'" in str(info.value)
    assert "action:" in str(info.value)


def test_specs_are_frozen() -> None:
    spec = pii()
    with pytest.raises(ValidationError):
        spec.name = "other"  # type: ignore[misc]


def test_specs_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        GuardrailSpec(kind="pii", name="pii", colour="red")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "spec",
    [
        schema(draft="7"),
        pii(rules=["email"], action="deny", placements=["tool-result"], timeout=3.0),
        moderation(classifier="strict", threshold=0.5),
        HouseRule().spec(),
    ],
    ids=["schema", "pii", "moderation", "custom"],
)
def test_specs_round_trip_through_json(spec: GuardrailSpec) -> None:
    again = GuardrailSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    assert again.model_dump_json() == spec.model_dump_json()


def test_a_built_guardrail_takes_its_name_placements_and_timeout_from_the_spec() -> None:
    impl = build(pii(name="pii-results", placements=["tool-result"], timeout=1.5), Resources())
    assert impl.name == "pii-results"
    assert impl.placements == frozenset({"tool-result"})
    assert impl.timeout == 1.5


def test_an_unknown_on_error_on_a_decorated_function_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown on_error 'ignore'.*known: deny, fail"):

        @guardrail(on_error="ignore")  # type: ignore[arg-type]
        def lenient(subject: Subject) -> bool:
            return True
