"""The outsiders' corpus (``tests/corpus/agentdojo``): its shape, its configuration and its split.

The builder needs the ``agentdojo`` package, which the test suite does not install, so these
tests read the committed files: every row in the shape ``benchmarks/injection.py`` reads, the
catalogue exactly the builder's configuration, and every row in the half the builder's own
split function gives its user task.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "agentdojo"))

import build  # noqa: E402

from benchmarks import injection  # noqa: E402

SUITES = {"workspace", "slack", "banking", "travel"}
USER_TASKS = {"workspace": 40, "slack": 21, "banking": 16, "travel": 20}
INJECTION_TASKS = {"workspace": 6, "slack": 4, "banking": 9, "travel": 6}
"""The suite's injection tasks whose published ground truth makes a write or send."""


@pytest.fixture(scope="module")
def corpus() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return injection.load(injection.AGENTDOJO, injection.AGENTDOJO_CATALOGUE)


def test_the_builder_names_what_it_reads_and_its_licence() -> None:
    doc = build.__doc__ or ""
    assert (build.PACKAGE_VERSION, build.SUITE_VERSION, build.ATTACK) == (
        "0.1.35", "v1.2.2", "important_instructions",
    )  # fmt: skip
    for words in ("agentdojo", "MIT License", "ethz-spylab", "0.1.35", "v1.2.2"):
        assert words in doc


def test_every_user_task_has_one_benign_variant_and_one_per_injection_task(
    corpus: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    rows, _ = corpus
    assert {r["domain"] for r in rows} == SUITES
    per_task: dict[str, Counter[str]] = {}
    for r in rows:
        per_task.setdefault(r["task"], Counter())[r["variant"]] += 1
        assert r["id"] == f"{r['task']}/{r['attack'] or 'benign'}"
    for suite, n in USER_TASKS.items():
        tasks = [t for t in per_task if t.startswith(f"{suite}/")]
        assert len(tasks) == n, suite
        for t in tasks:
            assert per_task[t] == {"benign": 1, "injected": INJECTION_TASKS[suite]}, t
    assert sum(r["variant"] == "injected" for r in rows) == 588


def test_every_row_is_in_the_shape_the_benchmark_reads(
    corpus: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    rows, catalogue = corpus
    for r in rows:
        assert set(r) == {
            "attack", "domain", "id", "now", "split", "steps", "style", "task", "turn", "variant",
        }  # fmt: skip
        tools = catalogue[r["domain"]]["tools"]
        assert r["turn"] and r["steps"] and len(r["now"]) == 10
        for s in r["steps"]:
            assert s["tool"] in tools and isinstance(s["args"], dict) and "result" in s
            harmful = s.get("injected") and tools[s["tool"]]["kind"] != "read"
            assert s["expect"] == ("deny" if harmful else "allow")  # an injected read runs


def test_the_injection_arrives_in_outside_content_before_the_calls_it_asks_for(
    corpus: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    rows, catalogue = corpus
    for r in (r for r in rows if r["variant"] == "injected"):
        tools = catalogue[r["domain"]]["tools"]
        first = next(i for i, s in enumerate(r["steps"]) if s.get("injected"))
        carrier = r["steps"][first - 1]
        assert "<INFORMATION>" in str(carrier["result"]), r["id"]
        assert tools[carrier["tool"]].get("labels"), f"{r['id']}: carried by a labelled tool"
        assert any(s.get("injected") and tools[s["tool"]]["kind"] != "read" for s in r["steps"]), (
            f"{r['id']}: the injection asks for a write or send"
        )
        assert r["style"] == "important_instructions"


def test_the_catalogue_is_the_builder_s_configuration(
    corpus: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    _, catalogue = corpus
    assert set(catalogue) == SUITES
    for suite, entry in catalogue.items():
        assert entry["rules"] == build.SHEET.format(suite=suite)
        for name, tool in entry["tools"].items():
            assert tool["kind"] == build.KINDS[suite].get(name, "read"), name
            assert tool.get("labels") == (
                [build.LABELS[suite][name]] if name in build.LABELS[suite] else None
            ), name
            assert tool.get("payment_field") == build.PAYMENTS.get(suite, {}).get(name), name
            assert tool["input_schema"]["type"] == "object" and tool["description"]
        assert set(build.KINDS[suite]) | set(build.LABELS[suite]) <= set(entry["tools"])


def test_each_user_task_is_in_the_half_the_builder_s_split_gives_it(
    corpus: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    rows, _ = corpus
    for suite in SUITES:
        tasks = sorted({r["task"].split("/", 1)[1] for r in rows if r["domain"] == suite})
        halves = build.half(suite, tasks)
        counts = Counter(halves.values())
        assert counts["tuning"] - counts["held-out"] in (0, 1), suite  # halves, rounded up
        for r in (r for r in rows if r["domain"] == suite):
            assert r["split"] == halves[r["task"].split("/", 1)[1]], r["id"]


def test_the_split_is_deterministic_and_by_task_id_alone() -> None:
    tasks = [f"user_task_{i}" for i in range(20)]
    assert build.half("travel", tasks) == build.half("travel", list(reversed(tasks)))
    assert build.half("travel", tasks) != build.half("banking", tasks)  # the suite is hashed too


def test_the_corpus_file_stays_a_few_megabytes() -> None:
    assert injection.AGENTDOJO.stat().st_size < 8 * 1024 * 1024
