"""The overhead benchmark runs end to end at tiny sizes; its event counts are deterministic."""

from __future__ import annotations

import pytest

from benchmarks import overhead


@pytest.fixture(scope="module")
async def report(temporal_env) -> overhead.Report:
    return await overhead.measure(
        temporal_env, calls=3, reps=1, session_calls=4, probes=(2, 4), warmup=0
    )


def _index(report: overhead.Report, key: str, mode: str | None) -> int:
    return next(i for i, v in enumerate(report.variants) if v.key == key and v.check_mode == mode)


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


async def test_default_mode_adds_one_marker_event_per_guarded_call(
    report: overhead.Report,
) -> None:
    base = report.loops[_index(report, "unguarded", None)].stats
    for key in ("schema+pii", "schema+pii+policy"):
        stats = report.loops[_index(report, key, None)].stats
        assert stats.check_steps == stats.local_checks  # every pass a local activity
        # the tool-args pass; the result is judged inside the tool's own step
        assert overhead.added_events(stats, base) == 1
        assert {c.guard_events for c in stats.per_call.values()} == {1}


async def test_regular_activity_mode_writes_activity_events_per_pass(
    report: overhead.Report,
) -> None:
    stats = report.loops[_index(report, "schema+pii", "activity")].stats
    assert stats.local_checks == 0
    assert stats.check_steps > 0
    # scheduled, started and completed for the tool-args pass (the result is judged in the tool)
    assert {c.guard_events for c in stats.per_call.values()} == {3}


async def test_session_calls_each_add_the_tool_step_and_one_pass(
    report: overhead.Report,
) -> None:
    session = report.session
    assert session is not None
    assert sorted(session.per_call) == [2, 3, 4]
    # tool step (3) + workflow task (3) + the tool-args marker (1)
    assert {c.events for c in session.per_call.values()} == {7}
    assert {c.guard_events for c in session.per_call.values()} == {1}


async def test_report_prints_targets_beside_the_numbers(report: overhead.Report) -> None:
    text = overhead.render(report)
    assert "guarded / unguarded" in text
    assert "<= 1.15" in text
    assert "added ev/call" in text
    assert "guard steps only" in text
    assert "PASS" in text or "FAIL" in text


def test_arguments_too_small_for_the_probe_are_refused() -> None:
    with pytest.raises(SystemExit):
        overhead.main(["--calls", "3"])
