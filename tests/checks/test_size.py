"""size_cap: the serialised JSON length of a tool's input or result against a cap."""

from __future__ import annotations

import pytest

from duraguard.checks import size_cap
from duraguard.engine import evaluate
from duraguard.errors import ConfigurationError


async def test_size_cap_lets_through_an_input_at_the_cap() -> None:
    value = {"q": "x" * 10}  # {"q":"xxxxxxxxxx"} is 18 characters
    result = await evaluate([size_cap(max_chars=18)], value, tool="search")
    assert not result.tripped


async def test_size_cap_refuses_an_input_over_the_cap_naming_length_cap_and_tool() -> None:
    value = {"body": "y" * 200}
    result = await evaluate([size_cap(max_chars=100)], value, tool="send_email")
    assert result.verdict.action == "deny"
    assert result.verdict.by == "size"
    reason = result.verdict.reason or ""
    assert "'send_email'" in reason
    assert "211 characters" in reason
    assert "cap of 100" in reason
    assert "send less" in reason


async def test_size_cap_facing_input_skips_results() -> None:
    result = await evaluate(
        [size_cap(max_chars=5)], {"a": "long"}, placement="tool-result", tool="t"
    )
    assert not result.tripped
    assert result.skipped == ("size",)


async def test_size_cap_facing_output_refuses_a_large_result() -> None:
    guard = size_cap(max_chars=50, direction="output")
    result = await evaluate([guard], ["row"] * 40, placement="tool-result", tool="list_orders")
    assert result.verdict.action == "deny"
    assert "the result of tool 'list_orders'" in (result.verdict.reason or "")
    assert "ask for less" in (result.verdict.reason or "")


async def test_size_cap_counts_characters_not_bytes() -> None:
    value = {"t": "é" * 10}  # {"t":"éééééééééé"} is 18 characters, 28 bytes
    assert not (await evaluate([size_cap(max_chars=18)], value, tool="t")).tripped


def test_size_cap_rejects_a_cap_that_is_not_positive() -> None:
    with pytest.raises(ConfigurationError, match="max_chars"):
        size_cap(max_chars=0)


def test_size_cap_rejects_an_unknown_direction() -> None:
    with pytest.raises(ConfigurationError, match="known: input, output, both"):
        size_cap(max_chars=10, direction="sideways")  # type: ignore[arg-type]
