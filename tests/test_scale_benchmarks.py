"""The fleet, at-scale and per-part benchmarks run end to end at tiny sizes: their structure is
checked, never a time (benchmarks/fleet.py, benchmarks/at_scale.py, benchmarks/step_cpu.py)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import at_scale, cpu, fleet, step_cpu

# The benchmarks at tiny sizes: CPU-bound, covered by the other tests too, untraced.
pytestmark = pytest.mark.no_cover


async def test_the_at_scale_benchmark_measures_every_loop_beside_the_plain_one(
    temporal_env: Any,
) -> None:
    figures = await at_scale.measure(
        temporal_env, calls=11, reps=1, agents=3, agent_calls=2, quiet=0
    )
    assert list(figures) == list(at_scale.VARIANTS)
    for f in figures.values():
        assert len(f.cpu_ms) == len(f.replay) == len(f.throughput) == 1
        assert f.cpu_ms[0] > 0 and f.bytes_10[0] > 0 and f.replay[0] > 0
    text = at_scale.render(figures, 11, 3, 2)
    assert all(name in text for name in at_scale.VARIANTS) and "targets (issue 29)" in text


async def test_each_loop_and_wave_at_scale_starts_on_a_quiet_server_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What at_scale measures runs after the wait: the loop's CPU is read and its wave started
    # only once the server is quiet (the timers a wave leaves cost the next loop two thirds
    # more worker CPU). The stand-ins record the order; the worker's CPU read is the loop's first.
    order: list[str] = []

    async def quiet(limit: float) -> float:
        order.append(f"quiet {limit}")
        return 0.0

    class Worker:
        async def cpu(self) -> dict[str, float]:
            order.append("cpu")
            raise RuntimeError("measured")

    async def run(*_a: Any) -> Any:
        order.append("run")
        raise RuntimeError("waved")

    monkeypatch.setattr(at_scale, "quiet_server", quiet)
    monkeypatch.setattr(at_scale, "_run", run)
    f = at_scale.Figures()
    with pytest.raises(RuntimeError, match="measured"):
        await at_scale._one(None, Worker(), "q", 3, 5, f, 20.0)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="waved"):
        await at_scale._wave(None, "q", 3, 2, 5, f, 20.0)  # type: ignore[arg-type]
    assert order[:4] == ["quiet 20.0", "cpu", "quiet 20.0", "run"]
    assert at_scale.measure.__kwdefaults__["quiet"] == at_scale.QUIET_WAIT > 0


def test_cpu_profiles_the_guarded_loop_as_it_runs_by_default() -> None:
    # --profile is for the loop issue 29 measures: schema + pii + policy in the default check
    # mode (it profiled the local-pass variant, whose cost is another one).
    (v,) = [v for v in cpu.variants() if v.key == cpu.PROFILED]
    assert [g.name for g in v.guardrails] == ["schema", "pii", "policy"]
    assert v.check_mode is None and v.hand is None


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


async def test_each_replay_of_the_long_session_starts_on_a_quiet_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The run's last workflow tasks leave timers that fire seconds after it: each replay waits
    # for them (as at_scale's loops do), so it is not timed beside the server's deferred work.
    from benchmarks import long_session

    order: list[str] = []

    async def quiet(limit: float) -> float:
        order.append(f"quiet {limit}")
        return 0.0

    class Replayer:
        def __init__(self, **_kw: Any) -> None:
            pass

        async def replay_workflow(self, *_a: Any, **_kw: Any) -> Any:
            order.append("replay")
            return type("Replayed", (), {"replay_failure": None})()

    class Plugin:
        checks_run = 0

    class History:
        events = (1, 2, 3)

    monkeypatch.setattr(long_session, "quiet_server", quiet)
    monkeypatch.setattr(long_session, "Replayer", Replayer)
    ran = long_session.Ran(calls=3, seconds=1.0, history=History())
    r = await long_session.replay(ran, Plugin(), 20.0)
    assert order == ["quiet 20.0", "replay", "quiet 20.0", "replay"]
    assert len(r.cpu_seconds) == 2 and r.events == 3
    assert long_session.measure.__kwdefaults__["quiet"] == long_session.QUIET_WAIT > 0


async def test_the_step_benchmark_times_each_part_of_both_loops(temporal_env: Any) -> None:
    figures = await step_cpu.measure(temporal_env, calls=3, reps=1, passes=20)
    assert list(figures.parts) == list(step_cpu.VARIANTS)
    for parts in figures.parts.values():
        assert set(parts) == {*step_cpu.PARTS, *step_cpu.LIVE}
        assert all(len(v) == 1 and v[0] > 0 for v in parts.values())
    assert len(figures.passes) == 5 and all(v[0] > 0 for v in figures.passes.values())
    text = step_cpu.render(figures)
    assert all(p in text for p in (*step_cpu.PARTS, *step_cpu.LIVE, "total", "pii, result"))
