"""address: every line of the SSRF, public and prose corpora in ``tests/corpus/address_*``.

The SSRF lines are spellings from public payload lists and parser-differential research
(loopback in every radix, metadata services of each cloud, userinfo and backslash tricks,
nested schemes, unparsable hosts); the public lines are real-world URLs that must pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from _corpus import cases, load

from duraguard.checks import address
from duraguard.checks.address import address_allowed, targets
from duraguard.engine import evaluate


@pytest.mark.parametrize("case", cases("address_ssrf.jsonl", "why"))
def test_address_refuses_every_ssrf_spelling_in_the_corpus(case: dict[str, Any]) -> None:
    ok, why = address_allowed(case["target"])
    assert not ok, f"{case['target']!r} ({case['why']}) was allowed"
    assert repr(case["target"]) in why


@pytest.mark.parametrize("case", cases("address_public.jsonl", "target"))
def test_address_allows_every_public_url_in_the_corpus(case: dict[str, Any]) -> None:
    assert address_allowed(case["target"]) == (True, "")


@pytest.mark.parametrize("case", cases("address_prose.jsonl", "text"))
async def test_address_reads_urls_in_free_text_as_a_reader_and_a_parser_would(
    case: dict[str, Any],
) -> None:
    result = await evaluate([address()], {"note": case["text"]}, tool="post")
    assert result.tripped == (case["expect"] == "refuse"), targets({"note": case["text"]})


def test_the_address_corpora_are_broad() -> None:
    ssrf = load("address_ssrf.jsonl")
    assert len(ssrf) >= 150 and len(load("address_public.jsonl")) >= 50
    assert len({c["why"] for c in ssrf}) >= 120  # distinct tricks, not one trick many times
