"""moderation(): text through a classifier registered by name; a missing one never allows."""

from __future__ import annotations

from typing import Any

import pytest

from duraguard import moderation
from duraguard.checks import Classification
from duraguard.engine import evaluate
from duraguard.errors import ConfigurationError
from duraguard.guardrail import Resources


def _flags(result: Any) -> Any:
    def classify(text: str) -> Any:
        classify.texts.append(text)  # type: ignore[attr-defined]
        return result

    classify.texts = []  # type: ignore[attr-defined]
    return classify


async def _moderate(value: Any, classify: Any, *, name: str = "default", **settings: Any) -> Any:
    resources = Resources(classifiers={name: classify})
    return await evaluate(
        [moderation(**settings)], value, placement="pre-prompt", resources=resources
    )


HATEFUL = {"flagged": True, "categories": ["hate", "harassment"], "score": 0.95}


@pytest.mark.parametrize(
    "answer", [HATEFUL, Classification(**HATEFUL)], ids=["dict", "Classification"]
)
async def test_moderation_halts_a_flagged_text_naming_its_categories(answer: Any) -> None:
    classify = _flags(answer)
    result = await _moderate("some hateful prompt", classify)
    assert classify.texts == ["some hateful prompt"]
    assert result.verdict.action == "halt"
    assert result.verdict.by == "moderation"
    assert [(d.rule, d.score) for d in result.verdict.detections] == [
        ("moderation.hate", 0.95),
        ("moderation.harassment", 0.95),
    ]
    assert "(hate, harassment)" in (result.verdict.reason or "")
    assert result.value is None


async def test_moderation_awaits_an_async_classifier() -> None:
    async def classify(text: str) -> Classification:
        return Classification(flagged=True, categories=["violence"], score=0.9)

    result = await _moderate("a violent prompt", classify)
    assert result.verdict.action == "halt"
    assert [d.rule for d in result.verdict.detections] == ["moderation.violence"]


async def test_moderation_allows_a_flag_below_the_threshold_and_records_what_it_saw() -> None:
    classify = _flags({"flagged": True, "categories": ["hate"], "score": 0.5})
    result = await _moderate("borderline", classify, threshold=0.8)
    assert result.verdict.action == "allow"
    assert [(d.rule, d.detected, d.score) for d in result.verdicts[0].detections] == [
        ("moderation.hate", False, 0.5)
    ]


async def test_moderation_acts_on_a_score_exactly_at_the_threshold() -> None:
    classify = _flags({"flagged": True, "categories": ["hate"], "score": 0.8})
    result = await _moderate("borderline", classify, threshold=0.8)
    assert result.verdict.action == "halt"


async def test_moderation_acts_on_a_flag_without_a_score() -> None:
    result = await _moderate("text", _flags({"flagged": True}), threshold=0.99)
    assert result.verdict.action == "halt"
    assert [d.rule for d in result.verdict.detections] == ["moderation.flagged"]


async def test_moderation_allows_text_the_classifier_does_not_flag() -> None:
    result = await _moderate("hello", _flags({"flagged": False, "score": 0.99}))
    assert result.verdict.action == "allow"
    assert not result.replaced and result.use("hello") == "hello"


async def test_moderation_action_can_be_deny() -> None:
    result = await _moderate("text", _flags(HATEFUL), action="deny")
    assert result.verdict.action == "deny"


async def test_moderation_reads_the_text_in_a_structured_value() -> None:
    classify = _flags({"flagged": False})
    await _moderate({"subject": "hi", "body": ["line one", 2]}, classify)
    assert classify.texts == ["subject\nhi\nbody\nline one\n2"]  # keys are text too


async def test_moderation_asks_the_classifier_registered_under_its_name() -> None:
    classify = _flags(HATEFUL)
    result = await _moderate("text", classify, name="strict", classifier="strict")
    assert result.verdict.action == "halt"
    assert "'strict'" in (result.verdict.reason or "")


async def test_moderation_without_its_classifier_refuses_partially_never_allows() -> None:
    resources = Resources(classifiers={"other": _flags({"flagged": False})})
    result = await evaluate([moderation()], "hello", placement="pre-prompt", resources=resources)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"
    assert result.verdict.by == "moderation"
    reason = result.verdict.reason or ""
    assert "no moderation classifier named 'default'" in reason
    assert "registered: other" in reason


async def test_moderation_with_a_classifier_that_raises_refuses_partially() -> None:
    def classify(text: str) -> Any:
        raise ConnectionError("classifier unreachable")

    result = await _moderate("hello", classify)
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"


@pytest.mark.parametrize("threshold", [-0.1, 1.5])
def test_moderation_threshold_outside_zero_to_one_is_a_configuration_error(
    threshold: float,
) -> None:
    with pytest.raises(ConfigurationError) as info:
        moderation(threshold=threshold)
    assert "threshold" in str(info.value)


def test_moderation_defaults_to_halt_and_calls_out() -> None:
    spec = moderation()
    assert spec.settings["action"] == "halt"
    assert spec.remote is True


@pytest.mark.parametrize(
    "evasive",
    [
        "k\u200bi\u200bl\u200bl them",  # zero-width spaces
        "k\u200di\u200cl\u2060l them",  # joiner, non-joiner, word joiner
        "ki\u00adll them",  # soft hyphen
        "\u202ekill them\u202c",  # bidi override
        "ｋｉｌｌ them",  # full-width letters
        "𝐤𝐢𝐥𝐥 them",  # mathematical bold
        "kill\ufe0f them",  # variation selector
    ],
)
async def test_moderation_gives_the_classifier_normalised_text(evasive: str) -> None:
    classify = _flags({"flagged": False})
    await _moderate(evasive, classify)
    assert classify.texts == ["kill them"]
