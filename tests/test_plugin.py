"""DuraguardPlugin's construction and client wiring, without a server."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter

from duraguard import ApproverKeys, DuraguardPlugin, Subject, guardrail, tool
from duraguard.approvals import generate_keypair, load_public_key
from duraguard.errors import ConfigurationError


class PlainConverter(temporalio.converter.DefaultPayloadConverter):
    """A user's own payload converter that knows nothing of pydantic."""


class MyPydanticConverter(PydanticPayloadConverter):
    """A user's own converter built on pydantic's, as the error message advises."""


class NoopCodec(temporalio.converter.PayloadCodec):
    async def encode(self, payloads: Any) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Any) -> list[Payload]:
        return list(payloads)


def _client_converter(plugin: DuraguardPlugin, **config: Any) -> Any:
    out = plugin.configure_client(config)  # type: ignore[arg-type]
    return out["data_converter"]


def test_with_no_converter_the_client_gets_pydantics_payload_converter() -> None:
    converter = _client_converter(DuraguardPlugin())
    assert converter.payload_converter_class is PydanticPayloadConverter
    assert converter.payload_codec is None


def test_the_default_converter_is_replaced_by_pydantics() -> None:
    default = temporalio.converter.DataConverter.default
    converter = _client_converter(DuraguardPlugin(), data_converter=default)
    assert converter.payload_converter_class is PydanticPayloadConverter


def test_a_pydantic_based_converter_of_the_users_is_kept() -> None:
    mine = dataclasses.replace(
        temporalio.converter.DataConverter.default, payload_converter_class=MyPydanticConverter
    )
    converter = _client_converter(DuraguardPlugin(), data_converter=mine)
    assert converter.payload_converter_class is MyPydanticConverter


def test_a_converter_that_cannot_carry_pydantic_models_is_refused_with_the_fix() -> None:
    theirs = dataclasses.replace(
        temporalio.converter.DataConverter.default, payload_converter_class=PlainConverter
    )
    with pytest.raises(ConfigurationError) as info:
        _client_converter(DuraguardPlugin(), data_converter=theirs)
    message = str(info.value)
    assert "PlainConverter" in message
    assert "subclass temporalio.contrib.pydantic.PydanticPayloadConverter" in message


def test_a_codec_given_to_the_plugin_is_set_on_the_converter() -> None:
    codec = NoopCodec()
    converter = _client_converter(DuraguardPlugin(codec=codec))
    assert converter.payload_codec is codec
    assert converter.payload_converter_class is PydanticPayloadConverter


def test_a_second_codec_is_refused() -> None:
    existing = dataclasses.replace(
        temporalio.converter.DataConverter.default, payload_codec=NoopCodec()
    )
    with pytest.raises(ConfigurationError, match="already has a payload codec"):
        _client_converter(DuraguardPlugin(codec=NoopCodec()), data_converter=existing)


def test_two_tools_with_one_name_are_refused() -> None:
    @tool(name="refund")
    def refund_a(order: str) -> None: ...

    @tool(name="refund")
    def refund_b(order: str) -> None: ...

    with pytest.raises(ValueError, match="two tools are named 'refund'"):
        DuraguardPlugin(tools=[refund_a, refund_b])


def test_tools_are_registered_by_name() -> None:
    @tool
    def lookup(order: str) -> None: ...

    plugin = DuraguardPlugin(tools=[lookup])
    assert plugin.resources.tools == {"lookup": lookup}
    assert plugin.resources.tool_schema("lookup") == lookup.input_schema


def test_duraguards_steps_keep_their_activity_names_and_one_input_model_each() -> None:
    """Activity names are history: the steps are methods of the worker's role classes,
    registered bound, under the names and with the input models runs recorded them with."""
    from temporalio.activity import _Definition

    @tool
    def lookup(order: str) -> None: ...

    plugin = DuraguardPlugin(tools=[lookup])
    found = {}
    for fn in plugin.runtime.activities():
        d = _Definition.must_from_callable(fn)
        found[d.name] = (
            [t.__name__ for t in d.arg_types or ()],
            getattr(d.ret_type, "__name__", None),
        )
    assert found == {
        "duraguard.check": (["CheckRequest"], "CheckResponse"),
        "duraguard.verify-decision": (["VerifyRequest"], "ApprovalCheck"),
        "duraguard.verify-plan": (["VerifyPlanRequest"], "PlanCheck"),
        "duraguard.ask": (["PendingAsk"], "PendingAsk"),
        "duraguard.seal-session": (["SessionSnapshot"], "SealedSession"),
        "duraguard.open-session": (["OpenRequest"], "OpenedSession"),
        "duraguard.model": (["ModelRequest"], "ModelResponse"),
        # RestRead is RestFlags with the notes of outside content: a marker recorded before
        # is read by it (tests/test_outside_keys.py)
        "duraguard.read-rest": (["RestRequest"], "RestRead"),
        "lookup": (["ToolInvocation"], "ToolOutput"),
    }


def test_an_unknown_check_mode_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as info:
        DuraguardPlugin(check_mode="bogus")  # type: ignore[arg-type]
    assert "unknown check_mode 'bogus'; known: auto, local, activity" in str(info.value)


def test_something_that_is_not_a_guardrail_is_refused_and_the_fix_is_named() -> None:
    def plain(subject: Subject) -> bool:
        return True

    with pytest.raises(ConfigurationError) as info:
        DuraguardPlugin(guardrails=[plain])  # type: ignore[list-item]
    assert "got function" in str(info.value)
    assert "@duraguard.guardrail" in str(info.value)


def test_two_custom_guardrails_with_one_name_are_refused() -> None:
    @guardrail(name="house-rule")
    def one(subject: Subject) -> bool:
        return True

    @guardrail(name="house-rule")
    def two(subject: Subject) -> bool:
        return True

    with pytest.raises(ConfigurationError, match="two custom guardrails are named 'house-rule'"):
        DuraguardPlugin(guardrails=[one, two])


def test_custom_guardrails_are_lent_to_the_worker_by_name() -> None:
    @guardrail
    def house_rule(subject: Subject) -> bool:
        return True

    plugin = DuraguardPlugin(guardrails=[house_rule])
    assert plugin.resources.guardrails == {"house-rule": house_rule}


@pytest.mark.parametrize("as_type", [str, Path])
def test_approvers_given_as_a_path_are_loaded(tmp_path: Path, as_type: type) -> None:
    _, public_pem = generate_keypair()
    raw = load_public_key(public_pem)
    path = tmp_path / "approvers.yaml"
    path.write_text(f"alice: {{public_key: {base64.b64encode(raw).decode()}, roles: [manager]}}\n")
    plugin = DuraguardPlugin(approvers=as_type(path))
    keys = plugin.resources.extra["approvers"]
    assert isinstance(keys, ApproverKeys)
    alice = keys.get("alice")
    assert alice is not None
    assert alice.public_key == raw
    assert alice.roles == frozenset({"manager"})


def test_a_missing_approvers_file_is_refused_when_the_plugin_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="duraguard keygen"):
        DuraguardPlugin(approvers=tmp_path / "missing.yaml")


def test_classifiers_are_lent_to_the_worker_by_name() -> None:
    def classify(text: str) -> dict[str, Any]:
        return {"flagged": False}

    plugin = DuraguardPlugin(classifiers={"default": classify})
    assert plugin.resources.classifiers == {"default": classify}
