"""Replay reads verdicts back; a verdict is bound to what it judged."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.workflow import NondeterminismError

from duraguard._ledger import Ledger
from duraguard._types import SessionView
from tests._servers import Replayer

from ._harness import Harness, make_harness
from ._replay_workflows import BindingV1, BindingV2


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env, workflows=[BindingV1])


@pytest.mark.parametrize("mode", ["local", "activity"])
async def test_replay_reads_the_verdict_back_and_asks_no_guardrail(h: Harness, mode: str) -> None:
    before = h.counting.calls
    run = await h.run(BindingV1.run, mode)  # run() replays and asserts no check ran again
    assert run.result == "True"
    assert h.counting.calls == before + 2  # the arguments, then the result
    check_ids = [aid for name, aid in run.activity_ids() if name == "duraguard.check"]
    # The result is judged inside the tool's own step: one check step per call.
    assert [i.rsplit("-", 1)[0] for i in check_ids] == ["dg-c1-tool-args"]
    assert [aid for name, aid in run.activity_ids() if name == "refund"] == ["c1"]
    # local mode writes a marker, activity mode a scheduled activity
    scheduled = [
        e for e in run.history.events if e.HasField("activity_task_scheduled_event_attributes")
    ]
    check_scheduled = [
        e
        for e in scheduled
        if e.activity_task_scheduled_event_attributes.activity_type.name == "duraguard.check"
    ]
    assert len(check_scheduled) == (1 if mode == "activity" else 0)


@pytest.mark.parametrize("mode", ["local", "activity"])
async def test_changed_arguments_fail_replay_loudly(h: Harness, mode: str) -> None:
    run = await h.run(BindingV1.run, mode)
    before = (h.plugin.checks_run, h.counting.calls)
    replayer = Replayer(workflows=[BindingV2], plugins=[h.plugin])
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(run.history)
    assert (h.plugin.checks_run, h.counting.calls) == before


@pytest.mark.parametrize("mode", ["local", "activity", "inline"])
async def test_replay_builds_no_session_view(
    h: Harness, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's input is not sent again while replaying: no session view is built for it (nor
    the provenance index worked out to build one), and the verdict is read back all the same.
    (A local step whose record was lost, and so runs with that input after replay, is the
    fault suite's ``check step, past its task``.)"""
    built: list[str] = []
    original = Ledger.view

    def counted(self: Ledger, **kw: Any) -> SessionView:
        built.append(kw["tool"])
        return original(self, **kw)

    monkeypatch.setattr(Ledger, "view", counted)
    run = await h.run(BindingV1.run, mode)  # run() replays too
    assert run.result == "True"
    assert built == ["refund"]  # the live run's one view; the replay built none
    await h.replay(run.history)
    assert built == ["refund"]
