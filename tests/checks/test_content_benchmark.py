"""The content-checks benchmark runs end to end at a tiny size (its figures are printed, never
asserted as times)."""

from __future__ import annotations

import pytest

from benchmarks import _adversarial, content_checks

# CPU-bound and covered elsewhere: not traced (coverage doubles its time; see dev.py).
pytestmark = pytest.mark.no_cover


def test_the_content_benchmark_measures_every_class_and_renders_a_table() -> None:
    report = content_checks.measure(reps=2, growth_kib=(1, 4))
    classes = {label.split(":")[0] for label in (*report.recall, *report.false_pos)}
    assert classes == {"address", "pii", "schema"}
    assert all(rate.total > 0 for rate in (*report.recall.values(), *report.false_pos.values()))
    assert any(label.startswith("pii") for label in report.cost_us)
    assert any(label.startswith("schema") for label in report.cost_us)
    assert any(label.startswith("address") for label in report.cost_us)
    every = {(c, item.name) for item in _adversarial.INPUTS for c in item.checks}
    assert set(report.growth) == every
    assert {c for c, _ in every} == {"pii", "address", "schema", "size", "moderation"}
    assert all(set(row) == {1, 4} for row in report.growth.values())
    table = content_checks.render(report)
    assert "recall (must be caught)" in table and "median CPU µs" in table
    assert "µs/KiB" in table and "almost-phones" in table
