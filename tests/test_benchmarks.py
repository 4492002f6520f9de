"""The benchmarks run end to end at tiny sizes (``benchmarks/measured.py --quick`` and smaller):
their structure and event counts are checked, never a time."""

from __future__ import annotations

import statistics

import pytest

from benchmarks import concurrency, cpu, long_session, measured, overhead
from benchmarks._workflows import ASK_EVERY

# The benchmarks at tiny sizes: CPU-bound, covered by the other tests too, untraced. The first
# test's set-up runs them all (about a minute on a quiet machine, past 120 s beside stress).
pytestmark = [pytest.mark.no_cover, pytest.mark.timeout(600)]


TINY = measured.Sizes(
    overhead_calls=3, overhead_reps=1, overhead_session=4, cpu_calls=3, cpu_reps=1, agents=4,
    agent_calls=2, agent_reps=1, session_calls=60, replay_calls=12, continue_after_events=250,
    policy_iterations=30, warmup=0, quiet=0,
)  # fmt: skip


@pytest.fixture(scope="module")
async def everything(temporal_env) -> measured.Everything:
    return await measured.measure_all(temporal_env, TINY, quick=True)


@pytest.fixture(scope="module")
def report(everything: measured.Everything) -> overhead.Report:
    assert everything.overhead is not None
    return everything.overhead


def _index(report: overhead.Report, key: str, mode: str | None, hand: str | None = None) -> int:
    return next(
        i
        for i, v in enumerate(report.variants)
        if v.key == key and v.check_mode == mode and v.hand == hand
    )


async def test_every_variant_ran_to_its_answer_with_nothing_refused(
    report: overhead.Report,
) -> None:
    assert set(report.loops) == set(range(len(report.variants)))
    for run in report.loops.values():
        assert (run.stop_reason, run.refused) == ("done", 0)
    assert all(len(times) == 1 for times in report.seconds.values())


async def test_unguarded_loop_writes_no_guardrail_step(report: overhead.Report) -> None:
    stats = report.loops[_index(report, "unguarded", None)].stats
    assert stats.check_steps == 0
    assert all(c.guard_events == 0 for c in stats.per_call.values())


async def test_local_mode_adds_one_marker_event_per_guarded_call(
    report: overhead.Report,
) -> None:
    base = report.loops[_index(report, "unguarded", None)].stats
    stats = report.loops[_index(report, "schema+pii+policy", "local")].stats
    assert stats.check_steps == stats.local_checks  # every pass a local activity
    # the tool-args pass; the result is judged inside the tool's own step
    assert overhead.added_events(stats, base) == 1
    assert {c.guard_events for c in stats.per_call.values()} == {1}


async def test_default_mode_adds_no_event_per_guarded_call(report: overhead.Report) -> None:
    base = report.loops[_index(report, "unguarded", None)].stats
    for key in ("schema+pii", "schema+pii+policy"):
        stats = report.loops[_index(report, key, None)].stats
        # judged inside the tool's own step, the prompt inside the first model step and the
        # answer inside the model step that gave it: no step of their own
        assert overhead.added_events(stats, base) == 0
        assert {c.guard_events for c in stats.per_call.values()} == {0}
        assert stats.check_steps == stats.local_checks == 0


async def test_regular_activity_mode_writes_activity_events_per_pass(
    report: overhead.Report,
) -> None:
    stats = report.loops[_index(report, "schema+pii(deny)", "activity")].stats
    assert stats.local_checks == 0
    assert stats.check_steps > 0
    # scheduled, started and completed for the tool-args pass (the result is judged in the tool)
    assert {c.guard_events for c in stats.per_call.values()} == {3}


async def test_the_hand_written_loop_costs_what_an_unguarded_loop_does_plus_its_check(
    report: overhead.Report,
) -> None:
    base = report.loops[_index(report, "unguarded", None)].stats
    plain = report.loops[_index(report, "hand loop", None, "none")].stats
    checked = report.loops[_index(report, "hand loop", None, "activity")].stats
    assert plain.check_steps == 0 and overhead.added_events(plain, base) == 0
    # its own check activity: scheduled, started, completed, and a workflow task to act on it
    assert {c.guard_events for c in checked.per_call.values()} == {3}
    assert overhead.added_events(checked, plain) == 6


async def test_session_calls_each_add_a_local_pass_where_pii_may_mask_and_the_tool_step(
    report: overhead.Report,
) -> None:
    session = report.session
    assert session is not None
    assert sorted(session.per_call) == [2, 3, 4]
    # pii may mask the arguments: a local pass (its marker) before the tool's step is written
    # (which holds them as judged), the tool step (3) and its workflow task (3)
    assert {c.events for c in session.per_call.values()} == {7}
    assert {c.guard_events for c in session.per_call.values()} == {1}


async def test_cpu_is_read_for_every_variant_from_the_worker_process(
    everything: measured.Everything,
) -> None:
    report = everything.cpu
    assert report is not None
    keys = [v.key for v in report.variants]
    assert keys[0] == "unguarded agent_loop" and "duraguard schema+pii+policy" in keys
    for reps in report.ms_per_call.values():
        assert len(reps) == 1
        assert set(reps[0]) == {"total", "loop", "workflow", "other"}
        assert reps[0]["total"] == pytest.approx(
            reps[0]["loop"] + reps[0]["workflow"] + reps[0]["other"]
        )


async def test_concurrent_agents_each_make_every_call(everything: measured.Everything) -> None:
    report = everything.concurrency
    assert report is not None
    for waves in report.waves.values():
        (wave,) = waves
        assert wave.calls == TINY.agents * TINY.agent_calls
        assert len(wave.latencies_ms) == wave.calls
        # CPU per call while the wave ran, by process (the worker's own process did work)
        assert set(wave.cpu_ms) == {"worker", "server", "client"}
        assert wave.cpu_ms["worker"] > 0 and min(wave.cpu_ms.values()) >= 0
    unguarded, guarded, local = (report.waves[i][0] for i in range(3))
    assert [v.check_mode for v in report.variants] == [None, None, "local"]
    assert unguarded.check_steps == 0
    # local: a pass per call, and per agent the prompt's, the model's answer's, the final one's
    assert local.check_steps == wave.calls + 3 * TINY.agents
    # the default: each call judged inside its tool's step, the prompt and the answer inside
    # model steps: no guardrail step of its own
    assert guarded.check_steps == 0
    assert concurrency.percentile([3.0, 1.0, 2.0], 50) == 2.0


async def test_the_long_session_continues_as_new_asks_and_replays_without_checks(
    everything: measured.Everything,
) -> None:
    report = everything.session
    assert report is not None
    s = report.session
    assert s.stop_reason == "done" and s.calls == TINY.session_calls
    assert s.runs >= 3 and len(s.carried) == s.runs - 1
    assert s.approvals == s.asked == 1  # call 50 asks a manager
    assert all(c.sealed_bytes < c.input_bytes for c in s.carried)
    ordinary = [c for n, c in s.per_call.items() if n % ASK_EVERY != ASK_EVERY // 2]
    # model step (3) + task (3) + tool step (3) + task (3): the arguments judged in the tool's
    assert statistics.median(c.events for c in ordinary) == 12
    assert {c.guard_events for c in ordinary} == {0}
    assert [long_session.probe(s.per_call, n) is not None for n in report.probes] == [True] * 3
    assert report.replay is not None and report.replay.checks_during_replay == 0
    assert len(report.replay.cpu_seconds) == 2 and all(c > 0 for c in report.replay.cpu_seconds)
    text = long_session.render(report)
    assert "issue 29's <= 0.05" in text and "CPU in the replays" in text


async def test_the_report_prints_every_target_beside_its_figure(
    everything: measured.Everything,
) -> None:
    text = measured.render(everything)
    for words in (
        "guarded / unguarded",
        "Regular-activity mode",
        "Worker process CPU per call",
        "agents at once",
        "One agent_loop session",
        "Carried at each continue-as-new",
        "Replay of a 12-call history",
        "then",
        "policy",
        "QUICK (small sizes",
    ):
        assert words in text
    rows = measured.summary(everything)
    assert all(len(r) == 4 for r in rows)
    assert {r[3] for r in rows} <= {"PASS", "FAIL", "-"}
    assert cpu.MAX_ADDED_MS == 5.0


def test_arguments_too_small_for_the_probe_are_refused() -> None:
    with pytest.raises(SystemExit):
        overhead.main(["--calls", "3"])
