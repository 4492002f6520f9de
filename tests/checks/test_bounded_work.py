"""Content checks do work in proportion to their input, and one past its deadline stops working
(issue 24, class 3). Work is counted (``duraguard._deadline``: characters handed to a scanner,
candidates examined, subschemas applied), never timed."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from benchmarks._adversarial import INPUTS, SCHEMAS, spec
from duraguard import _deadline, pii, schema
from duraguard._types import Subject
from duraguard.checks import Classification
from duraguard.checks.pii import find
from duraguard.engine import evaluate
from duraguard.guardrail import Resources, build

# CPU-bound and covered elsewhere: not traced (coverage doubles its time; see dev.py).
pytestmark = pytest.mark.no_cover

CHECKS = Path(__file__).resolve().parents[2] / "duraguard" / "checks"
CASES = [(item, check) for item in INPUTS for check in item.checks]
RESOURCES = Resources(classifiers={"default": lambda text: Classification()})


async def _steps(check: str, item: Any, size: int) -> int:
    guard = build(spec(check), RESOURCES)
    schema_of = SCHEMAS.get(item.name) if check == "schema" else None
    subject = Subject(placement="tool-args", value=item.make(size), tool="t", schema=schema_of)
    with _deadline.within(None) as work:
        await guard.check(subject)
    return work.steps


@pytest.mark.parametrize(("item", "check"), CASES, ids=[f"{c}-{i.name}" for i, c in CASES])
async def test_work_grows_linearly_with_an_adversarial_input(item: Any, check: str) -> None:
    small, large = await _steps(check, item, 8192), await _steps(check, item, 32768)
    assert small > 0
    assert large <= 4 * small * 1.25 + 1024, f"{check} on {item.name}: {small} -> {large} steps"


def _threads_in_checks() -> list[str]:
    """The threads (other than this one) whose stack is inside duraguard's content checks."""
    me = threading.get_ident()
    busy = []
    for ident, frame in sys._current_frames().items():
        f: Any = frame
        while f is not None and ident != me:
            if Path(f.f_code.co_filename).parent == CHECKS:
                busy.append(str(ident))
                break
            f = f.f_back
    return busy


async def _quiet(polls: int = 1000) -> bool:
    for _ in range(polls):
        if not _threads_in_checks():
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.mark.parametrize(
    ("rule", "unit"),
    [("phone", "(415) 555-013 "), ("email", "4\u200b1\u0301 ")],
    ids=["reading-phones", "normalising"],
)
async def test_a_content_check_past_its_timeout_stops_working(rule: str, unit: str) -> None:
    text = unit * ((1 << 20) // len(unit))  # 1 MiB of near-matches: seconds of work in full
    with _deadline.within(None) as work:
        find(text[: len(text) // 8], [rule])
        an_eighth = work.steps
    before = _deadline.total()
    result = await evaluate([pii(rules=[rule], timeout=0.1)], {"page": text})
    assert (result.verdict.action, result.outcome) == ("deny", "partial")
    assert [d.rule for d in result.verdict.detections] == ["guardrail.timeout"]
    assert await _quiet(), f"still working after the verdict: {_threads_in_checks()}"
    stopped_at = _deadline.total()
    await asyncio.sleep(0.5)
    assert _deadline.total() == stopped_at, "the check's work counter still moves"
    # It stopped partway: less than half of what the whole value takes (eight eighths).
    assert stopped_at - before < 4 * an_eighth


async def test_a_schema_check_past_its_timeout_stops_working() -> None:
    from duraguard.checks.schema import problems

    value = [{"sku": f"A-{i}", "tags": [i, str(i)]} for i in range(200_000)]
    tool_schema = {
        "type": "array",
        "uniqueItems": True,
        "items": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "tags": {"type": "array"}},
        },
    }
    with _deadline.within(None) as work:
        problems(tool_schema, value[: len(value) // 8])
        full_of_an_eighth = work.steps
    before = _deadline.total()
    result = await evaluate([schema(timeout=0.3)], value, tool="t", schema=tool_schema)
    assert (result.verdict.action, result.outcome) == ("deny", "partial")
    assert await _quiet()
    stopped_at = _deadline.total()
    await asyncio.sleep(0.5)
    assert _deadline.total() == stopped_at
    assert stopped_at - before < 4 * full_of_an_eighth


def test_a_deadline_stops_the_finder_itself_and_counts_what_it_did() -> None:
    with pytest.raises(_deadline.Overrun), _deadline.within(0.0) as work:
        time.sleep(0.01)
        find("call (415) 555-0132 " * 1000)
    assert work.steps < 20_000  # stopped before one pass over the text


def test_a_phone_number_after_many_failed_candidates_is_still_found() -> None:
    # phonenumbers stops reading a text after 65,535 failed tries (its default max_tries):
    # past them a real number went unread. Each window now has a fresh, unbounded budget.
    text = "1 " * 80_000 + " call me at 415-555-0132"
    assert ("phone", len(text) - 12, len(text)) in find(text, ["phone"])


# -- uniqueItems and unevaluatedItems mean what jsonschema's mean -------------------------------


@pytest.mark.parametrize(
    "items",
    [
        [1, 1.0],
        [1, True],
        [0, False],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        [{"a": 1}, {"a": True}],
        [[1], [True]],
        [[1, 2], [2, 1]],
        ["1", 1],
        [None, None],
        [[{"a": [1]}], [{"a": [1.0]}]],
        [{"a": 1}, "x", 2, [3]],
        [],
    ],
)
def test_unique_items_agrees_with_jsonschema(items: list[Any]) -> None:
    from duraguard.checks.schema import problems

    stock = jsonschema.Draft202012Validator({"uniqueItems": True}).is_valid(items)
    assert (problems({"uniqueItems": True}, items) == []) is stock


@pytest.mark.parametrize("draft", ["2019-09", "2020-12"])
@pytest.mark.parametrize(
    "items", [[1, 2, 3], [1, "x", 3], ["x"], [1, "x", "y"], []], ids=lambda v: str(v)
)
def test_unevaluated_items_agrees_with_jsonschema(draft: str, items: list[Any]) -> None:
    from duraguard.checks.schema import problems

    tool_schema = {"prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "integer"}}
    if draft == "2019-09":
        tool_schema = {"items": [{"type": "integer"}], "unevaluatedItems": {"type": "integer"}}
    stock_cls = (
        jsonschema.Draft201909Validator if draft == "2019-09" else jsonschema.Draft202012Validator
    )
    stock = stock_cls(tool_schema).is_valid(items)
    assert (problems(tool_schema, items, draft) == []) is stock
