"""The fleet and at-scale benchmarks run end to end at tiny sizes: their structure is checked,
never a time (benchmarks/fleet.py, benchmarks/at_scale.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import at_scale, fleet

# The benchmarks at tiny sizes: CPU-bound, covered by the other tests too, untraced.
pytestmark = pytest.mark.no_cover


async def test_the_at_scale_benchmark_measures_every_loop_beside_the_plain_one(
    temporal_env: Any,
) -> None:
    figures = await at_scale.measure(temporal_env, calls=11, reps=1, agents=3, agent_calls=2)
    assert list(figures) == list(at_scale.VARIANTS)
    for f in figures.values():
        assert len(f.cpu_ms) == len(f.replay) == len(f.throughput) == 1
        assert f.cpu_ms[0] > 0 and f.bytes_10[0] > 0 and f.replay[0] > 0
    text = at_scale.render(figures, 11, 3, 2)
    assert all(name in text for name in at_scale.VARIANTS) and "targets (issue 29)" in text


async def test_the_fleet_benchmark_counts_the_protocol_on_one_and_three_workers(
    temporal_env: Any, postgres: Any
) -> None:
    measured = await fleet.measure(temporal_env, sessions=3, reps=1, dsn=postgres.dsn)
    assert list(measured) == [v[0] for v in fleet.VARIANTS]
    for name, m in measured.items():
        assert m.sessions == 3 and m.calls == 12 and m.protocol.history_bytes > 0, name
        assert m.protocol.by_ref > 0, name  # the guardrails and entries go by reference
    one = measured["1 worker"]
    assert one.protocol.misses == 0 and one.spread == 0 and len(one.protocol.workers) == 1
    assert len(measured["3 workers, no eager"].protocol.workers) >= 2
    assert "miss rate" in fleet.render(measured, 3)


def test_the_at_scale_table_shows_each_figure_s_spread_over_repetitions() -> None:
    assert at_scale._spread([3.0, 1.0, 2.0], "{:.1f}") == "1.0-3.0"
    figures = {
        name: at_scale.Figures([10.0, 14.0, 12.0], [3000] * 3, [4000.0] * 3, [0.04] * 3,
                               [30.0, 36.0, 33.0])
        for name in at_scale.VARIANTS
    }  # fmt: skip
    text = at_scale.render(figures, 50, 200, 5)
    assert "10.0-14.0" in text and "30.0-36.0" in text and "12.00" in text
