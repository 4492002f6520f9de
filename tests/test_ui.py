"""In the Temporal Web UI (issue 5): a person opening a demo run sees each guardrail pass as a
step named by its tool and guardrails, and the verdict table in the workflow's current details,
and none of what is shown by name carries a refused value or a refusal's reason.

The demo's worker runs on a dev server with the Web UI; headless Chromium opens each run's
Timeline, Event History (compact) and User Metadata tabs while the worker is up (current details
are answered by a query). Screenshots go to ``$DURAGUARD_ARTIFACTS/ui`` (``artifacts/`` is
gitignored) or else the pytest tmp dir.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

import duraguard
from activities import support_tools
from duraguard.audit import audit_rows
from duraguard.models import ScriptedModels
from duraguard.server import DevServer
from tests._browser import Chromium
from tests._browser import chromium as _chromium
from workflows.demo import SCENARIOS, SCRIPTS, _keys, _wait_pending, demo_classifier
from workflows.support import RULES, SupportAgent, Ticket

pytestmark = pytest.mark.timeout(150)

FINISHED = ("schema-fix", "mask-card", "moderation-halt")
PARKED = "manager-refund"
CHECKS = "[moderation, policy]"
"""The checks a call's step names: schema and pii (pii may mask) judged the calls already, in
the model step that proposed them (:data:`IN_MODEL_STEP`), and are not judged again."""
IN_MODEL_STEP = "judges the calls it proposes [schema, pii]"

# What each run was refused, masked or held on: the page must never show it by name.
REFUSED = {
    "schema-fix": ["twenty"],
    "mask-card": ["4111 1111 1111 1111", "4111"],
    "moderation-halt": ["hurt you", "Stop complaining"],
    "manager-refund": ["350"],
}

# The Timeline lists a step as "<activity type> • <summary>"; the compact Event History lists
# "Activity Type", the type, "Summary", the summary, one per line.
TIMELINE_STEP = re.compile(r"^(\S+) • (.+)$", re.MULTILINE)
HISTORY_STEP = re.compile(r"Activity Type\s*\n\s*(\S+)\s*\n\s*Summary\s*\n\s*([^\n]+)")


@dataclass(frozen=True)
class Step:
    """A step as history records it: activity type, summary, and whether it ran locally."""

    type: str
    summary: str
    local: bool


def recorded_steps(history: Any) -> list[Step]:
    """Every activity in history order with the summary it was scheduled with."""
    out = []
    for e in history.events:
        if not e.user_metadata.HasField("summary"):
            continue
        summary = json.loads(e.user_metadata.summary.data)
        if e.HasField("activity_task_scheduled_event_attributes"):
            out.append(
                Step(e.activity_task_scheduled_event_attributes.activity_type.name, summary, False)
            )
        elif e.HasField("marker_recorded_event_attributes"):
            data = e.marker_recorded_event_attributes.details["data"].payloads[0].data
            out.append(Step(json.loads(data)["activity_type"], summary, True))
    return out


@dataclass
class Seen:
    """What the UI showed for one run, tab by tab."""

    timeline: list[tuple[str, str]]
    history: list[tuple[str, str]]
    history_text: str
    details: str
    shots: list[Path]

    def by_name(self) -> str:
        """Everything the run's page shows by name: step summaries, the compact history, the
        current details (payloads, Input and Result, are the codec's business, not this)."""
        lines = [f"{t} • {s}" for t, s in self.timeline]
        return "\n".join([*lines, self.history_text, self.details])


@dataclass
class Desk:
    """The demo's support desk on a dev server with the UI, its worker up, and its runs."""

    binary: str
    ui_url: str
    client: Client
    shots: Path
    handles: dict[str, WorkflowHandle[SupportAgent, duraguard.AgentResult]]
    _seen: dict[str, Seen] = field(default_factory=dict)

    async def steps(self, scenario: str) -> list[Step]:
        return recorded_steps(await self.handles[scenario].fetch_history())

    async def reasons(self, scenario: str) -> list[str]:
        rows = await audit_rows(self.handles[scenario], self.client.data_converter)
        return [r.reason for r in rows if r.reason]

    async def look(self, scenario: str) -> Seen:
        """Open the run's page once (in a thread, so the worker keeps answering queries)."""
        if scenario not in self._seen:
            steps = await self.steps(scenario)
            self._seen[scenario] = await asyncio.to_thread(self._look, scenario, steps)
        return self._seen[scenario]

    def _look(self, scenario: str, steps: list[Step]) -> Seen:
        wid = self.handles[scenario].id
        remote = Counter((s.type, s.summary) for s in steps if not s.local)
        every = Counter((s.type, s.summary) for s in steps)
        with Chromium(self.binary, window=(1400, 1000)) as browser:
            browser.goto(f"{self.ui_url}/namespaces/default/workflows/{wid}")
            page = browser.wait_for_text(lambda t: Counter(TIMELINE_STEP.findall(t)) >= remote)
            shots = [browser.screenshot(self.shots / f"{scenario}-timeline.png")]
            timeline = TIMELINE_STEP.findall(page)

            _click(browser, "Event History", page)
            _click(browser, "Compact", browser.text())
            # compact: one row per step, no "Activity Task Scheduled" rows with payload previews
            page = browser.wait_for_text(
                lambda t: (
                    "Activity Task Scheduled" not in t and Counter(HISTORY_STEP.findall(t)) >= every
                )
            )
            history_text = page[page.index("Compact") : page.rindex("Per Page")]
            browser.resize(1920, 1000)  # wide enough for a whole summary
            shots.append(browser.screenshot(self.shots / f"{scenario}-history.png"))
            browser.resize(1400, 1000)

            _click(browser, "User Metadata", page)
            browser.wait_for_text(lambda _: "duraguard verdicts" in browser.frames_text())
            details = browser.frames_text()
            shots.append(browser.screenshot(self.shots / f"{scenario}-current-details.png"))
        return Seen(timeline, HISTORY_STEP.findall(history_text), history_text, details, shots)


def _click(browser: Chromium, label: str, page: str) -> None:
    if not browser.click_text(label):
        raise AssertionError(f"nothing labelled {label!r} on the workflow page; it showed:\n{page}")


@pytest.fixture(scope="module")
async def desk(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Desk]:
    binary = _chromium()
    artifacts = os.environ.get("DURAGUARD_ARTIFACTS")
    shots = Path(artifacts) / "ui" if artifacts else tmp_path_factory.mktemp("ui-shots")
    state = tmp_path_factory.mktemp("desk")
    _, approvers = _keys(state)
    tickets = {s.name: s.ticket for s in SCENARIOS}
    async with DevServer(ui=True) as server:
        plugin = duraguard.DuraguardPlugin(
            tools=support_tools(state / "support.db"),
            models={"scripted": ScriptedModels(SCRIPTS)},
            classifiers={"demo": demo_classifier},
            approvers=approvers,
            rules=RULES,
            search_attributes=True,
        )
        client = await Client.connect(server.address, plugins=[plugin])
        task_queue = f"ui-{uuid.uuid4().hex[:8]}"
        async with Worker(client, task_queue=task_queue, workflows=[SupportAgent]):
            handles = {}
            for name in (*FINISHED, PARKED):
                handles[name] = await client.start_workflow(
                    SupportAgent.run,
                    Ticket(ticket=tickets[name], model=f"scripted:{name}"),
                    id=f"support-{name}-{uuid.uuid4().hex[:6]}",
                    task_queue=task_queue,
                )
            for name in FINISHED:
                await handles[name].result()
            await _wait_pending(handles[PARKED])  # left waiting for a manager
            assert server.ui_url is not None
            yield Desk(
                binary=binary, ui_url=server.ui_url, client=client, shots=shots, handles=handles
            )
            # Nobody answers the parked ask; end it so the worker stops at once.
            await handles[PARKED].terminate(reason="test over")


async def test_timeline_names_each_check_step_by_tool_and_guardrails(desk: Desk) -> None:
    timeline = (await desk.look("schema-fix")).timeline
    assert ("duraguard.check", "duraguard pre-prompt: pre-prompt [moderation]") in timeline
    # the refused call, refused by the schema in the model step that proposed it (no step of
    # its own), and the corrected one, a step naming the tool and the checks after pii
    assert timeline.count(("duraguard.check", f"duraguard tool-args: refund_card {CHECKS}")) == 1
    assert sum(1 for _, s in timeline if IN_MODEL_STEP in s) >= 2
    # a model step judges a final answer it gives itself, and says with what
    assert (
        "duraguard.model",
        f"model turn 1, {IN_MODEL_STEP}, judges a final answer if it gives one [pii]",
    ) in timeline
    assert ("refund_card", "tool refund_card") in timeline


async def test_event_history_names_every_check_step_local_ones_too(desk: Desk) -> None:
    seen = await desk.look("schema-fix")
    recorded = [
        (s.type, s.summary) for s in await desk.steps("schema-fix") if s.type == "duraguard.check"
    ]
    # the passes run as local activities: the Timeline lists them without a summary (a tool's
    # result is judged inside the tool's own step, the final answer inside the model step that
    # gave it, so neither has a check step of its own)
    assert ("duraguard.check", "duraguard pre-prompt: pre-prompt [moderation]") in recorded
    assert not any(summary.startswith("duraguard tool-result") for _, summary in recorded)
    assert not any(summary.startswith("duraguard answer") for _, summary in recorded)
    assert Counter(seen.history) >= Counter(recorded), seen.history_text


async def test_current_details_show_the_schema_denial(desk: Desk) -> None:
    details = (await desk.look("schema-fix")).details
    assert "duraguard verdicts" in details
    assert re.search(r"turn\s+call\s+tool\s+where\s+action\s+decided by\s+approver", details), (
        details
    )
    assert re.search(r"c1\s+refund_card\s+tool-args\s+deny\s+schema\s", details), details


async def test_current_details_show_the_call_waiting_for_a_manager(desk: Desk) -> None:
    seen = await desk.look(PARKED)
    assert re.search(r"refund_card\s+tool-args\s+approve\s+policy\s", seen.details), seen.details
    assert "1 call(s) waiting for a person" in seen.details
    assert ("duraguard.check", f"duraguard tool-args: refund_card {CHECKS}") in seen.timeline


async def test_current_details_show_the_halt_by_moderation(desk: Desk) -> None:
    seen = await desk.look("moderation-halt")
    assert re.search(r"send_email\s+tool-args\s+halt\s+moderation\s", seen.details), seen.details
    assert "halted by moderation" in seen.details
    assert ("duraguard.check", f"duraguard tool-args: send_email {CHECKS}") in seen.timeline


async def test_current_details_show_the_card_masked_by_pii(desk: Desk) -> None:
    seen = await desk.look("mask-card")
    assert re.search(r"send_email\s+tool-args\s+mask\s+pii\s", seen.details), seen.details


@pytest.mark.parametrize("scenario", [*FINISHED, PARKED])
async def test_what_the_ui_shows_by_name_never_carries_the_refused_value_or_reason(
    desk: Desk, scenario: str
) -> None:
    seen = await desk.look(scenario)
    reasons = await desk.reasons(scenario)
    assert reasons, "the run recorded no reason to look for"
    shown = seen.by_name()
    for secret in [*REFUSED[scenario], *reasons]:
        assert secret not in shown, f"the UI shows {secret!r} for {scenario}:\n{shown}"
    for shot in seen.shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
