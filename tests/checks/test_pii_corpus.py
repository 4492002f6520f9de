"""pii: every line of ``tests/corpus/pii_found.jsonl`` and ``pii_benign.jsonl``.

Found lines are real-world spellings (national phone formats of many countries, IDN and
punycode emails, test card numbers split by invisible characters or written in other digits,
SSNs in every separator, CIDR spans, IPv6 forms), each with the exact span that must be found.
Benign lines are what must not be PII: dates, timestamps, versions, order and tracking numbers,
ISBNs, UUIDs, MACs, prices, SSA sample numbers. A line marked ``known_miss`` / ``known_fp`` is a
measured limit: the test holds it to that, so a fix shows up as a failing test to update.
"""

from __future__ import annotations

from typing import Any

import pytest
from _corpus import cases, load

from duraguard import pii
from duraguard.checks.pii import MASKS, find
from duraguard.engine import evaluate


def _found(case: dict[str, Any]) -> list[tuple[str, int, int]]:
    return find(case["text"], region=case.get("region", "US"), key=case.get("key", ""))


@pytest.mark.parametrize("case", cases("pii_found.jsonl", "value"))
def test_pii_finds_every_spelling_in_the_corpus_at_its_exact_span(case: dict[str, Any]) -> None:
    start = case["text"].index(case["value"])
    expected = (case["rule"], start, start + len(case["value"]))
    if case.get("known_miss"):
        assert expected not in _found(case), "a known miss is now found: update the corpus"
        return
    assert expected in _found(case), case.get("why", "")


@pytest.mark.parametrize("case", cases("pii_benign.jsonl", "text"))
def test_pii_finds_nothing_in_benign_text_of_the_corpus(case: dict[str, Any]) -> None:
    found = _found(case)
    if case.get("known_fp"):
        assert found, "a known false positive is gone: update the corpus"
        return
    assert found == [], case["why"]


@pytest.mark.parametrize("case", cases("pii_found.jsonl", "value"))
async def test_pii_masks_exactly_the_span_found_in_the_original(case: dict[str, Any]) -> None:
    if case.get("known_miss"):
        return
    key = case.get("key") or "note"
    guard = pii(rules=[case["rule"]], region=case.get("region", "US"))
    # a tool's result: every field is content (at tool-args ``phone`` addresses the call)
    result = await evaluate([guard], {key: case["text"]}, tool="t", placement="tool-result")
    start = case["text"].index(case["value"])
    masked = case["text"][:start] + MASKS[case["rule"]] + case["text"][start + len(case["value"]) :]
    assert result.value == {key: masked}
    hit = next(d for d in result.verdict.detections if d.start == start)
    assert (hit.start, hit.end, hit.path) == (start, start + len(case["value"]), f"#/{key}")


def test_the_pii_corpora_are_broad() -> None:
    found, benign = load("pii_found.jsonl"), load("pii_benign.jsonl")
    assert len(found) >= 120 and len(benign) >= 90
    assert {c["rule"] for c in found} == set(MASKS)
    phones = [c for c in found if c["rule"] == "phone"]
    assert len({c["region"] for c in phones if "region" in c}) >= 8  # national formats
    assert len({c["value"].split()[0] for c in phones if c["value"].startswith("+")}) >= 20
