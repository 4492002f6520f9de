"""schema: every case of ``tests/corpus/schema_suite.jsonl`` (JSON-Schema-Test-Suite shaped).

Boolean schemas, references through a registry (never the network), ``format`` as each dialect
says, ECMA-262 patterns and catastrophic patterns that must refuse rather than stall. A case's
``valid`` is ``true`` (allow), ``false`` (deny, outcome complete) or ``"partial"`` (the check
could not decide: deny, outcome partial).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from _corpus import CORPUS, load

from duraguard import schema
from duraguard.engine import evaluate
from duraguard.guardrail import Resources

# The documents a $ref may reach, lent by the worker under Resources.extra["docs"].
DOCS = json.loads((CORPUS / "schema_documents.json").read_text(encoding="utf-8"))


@dataclass
class Declared:
    """A tool as the worker knows it: only its input schema matters here (may be a boolean)."""

    input_schema: Any


CASES = [
    pytest.param(group, case, id=f"{i + 1}:{group['description'][:40]}:{case['description'][:30]}")
    for i, group in enumerate(load("schema_suite.jsonl"))
    for case in group["tests"]
]


@pytest.mark.parametrize(("group", "case"), CASES)
async def test_schema_judges_every_case_of_the_suite(
    group: dict[str, Any], case: dict[str, Any]
) -> None:
    settings = dict(group.get("settings", {}))
    if "registry" in group:
        settings["registry"] = group["registry"]
    resources = Resources(tools={"t": Declared(group["schema"])}, extra={"docs": DOCS})
    result = await evaluate([schema(**settings)], case["data"], tool="t", resources=resources)
    expected = case["valid"]
    if expected is True:
        assert result.verdict.action == "allow", result.verdict.reason
    elif expected is False:
        assert (result.verdict.action, result.outcome) == ("deny", "complete"), (
            result.verdict.reason
        )
    else:
        assert (result.verdict.action, result.outcome) == ("deny", "partial"), result.verdict.reason


def test_the_schema_suite_is_broad() -> None:
    groups = load("schema_suite.jsonl")
    assert len(groups) >= 50 and sum(len(g["tests"]) for g in groups) >= 100
