"""A trusted result's keys, worked out in the tool's step: noted as the workflow would have
noted them itself, taken only where they were worked out on what its ledger entry records, and
read back (not worked out again) by a replay."""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import duraguard._result_keys as result_keys_module
import duraguard._sources as sources_module
from duraguard import schema
from duraguard._ledger import Ledger, LedgerState
from duraguard._result_keys import ResultKeys, basis, result_keys, taken
from duraguard._sourceindex import _h, _pack
from duraguard._types import digest
from duraguard._wire import ToolInvocation
from duraguard._workings import day_of
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow

from ._harness import Harness, Run, completions, make_harness, patch_markers

AT = 1_790_000_000.0
DAY = day_of(AT)


def _hits(page: int) -> dict[str, Any]:
    return {
        "query": "orders charged twice",
        "page": page,
        "hits": [
            {
                "id": f"KB-{page * 10 + k:07d}",
                "url": f"https://kb.example.com/a/{page}-{k}",
                "snippet": f"Order A{page}{k} was charged twice on Saturday 18th; ref T-99{k}.",
                "amount": 20.5 + k,
            }
            for k in range(10)
        ],
    }


def _ledger(results: list[tuple[str, Any, Any]], *, keyed: bool, at: float = AT) -> Ledger:
    """A ledger of ``(tool, args, result)`` calls, each result's keys worked out as its step
    works them out (``keyed``) or read in the ledger (not)."""
    ledger = Ledger(LedgerState(session_id="s1"))
    for j, (tool, args, result) in enumerate(results):
        keys = result_keys(result, args, tool, DAY) if keyed else None
        ledger.record(
            call_id=f"c{j}", tool=tool, args=args, action="allow", ran=True, at=at, result=result,
            keys=keys,
        )  # fmt: skip
    return ledger


def _noted(ledger: Ledger) -> tuple[Any, dict[str, list[float]]]:
    """The index as carried, and the numbers each kept source holds (for worked-out values;
    not carried, so not in the index's state)."""
    store = ledger.sources
    state = store.state
    return state.sources, {store._names[s]: xs for s, xs in store._numbers.items()}


def _seen_at(ledger: Ledger, value: str) -> tuple[str, ...]:
    """Where the index places ``value`` as a call's argument (nowhere: ``()``)."""
    found = ledger.sources.lookup({"v": value})
    return tuple(s for p in found for s in p.sources)


class _Counted:
    """Counts the results the workflow reads itself; each note is worked in as it comes
    (a replay, which reads no index, otherwise works notes in eight at a time)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sources_module, "MAX_BACKLOG", 1)
        self.calls = 0
        """Results whose keys the workflow read itself."""
        self.numbers = 0
        """Results whose numbers the workflow read itself."""
        keys, numbers = sources_module.trusted_keys, sources_module.numbers_in

        def counted(*a: Any, **kw: Any) -> set[str]:
            self.calls += 1
            return keys(*a, **kw)

        def counted_numbers(*a: Any, **kw: Any) -> tuple[list[float], list[float]]:
            self.numbers += 1
            return numbers(*a, **kw)

        monkeypatch.setattr(sources_module, "trusted_keys", counted)
        monkeypatch.setattr(sources_module, "numbers_in", counted_numbers)


def test_keys_worked_out_in_the_step_index_the_session_as_reading_it_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls_ = [("search", {"query": "orders charged twice", "page": p}, _hits(p)) for p in range(90)]
    read = _noted(_ledger(calls_, keyed=False))
    read_in_workflow = _Counted(monkeypatch)
    keyed = _ledger(calls_, keyed=True)
    # The index is the same (its eviction past the budget too), and so are the numbers each
    # kept result holds; the workflow read nothing.
    assert _noted(keyed) == read
    assert read[1] and all(read[1].values())
    assert read_in_workflow.calls == 0 and read_in_workflow.numbers == 0
    assert _seen_at(keyed, "https://kb.example.com/a/89-3") == ("result:89",)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.text(max_size=40)
    | st.floats(allow_nan=False, allow_infinity=False, width=32),
    _containers,
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(result=JSON, args=st.dictionaries(st.sampled_from("abc"), JSON, max_size=3))
def test_any_result_is_noted_the_same_either_way(result: Any, args: dict[str, Any]) -> None:
    calls_ = [("tool", args, result)]
    assert _noted(_ledger(calls_, keyed=True)) == _noted(_ledger(calls_, keyed=False))


def _forged(value: str, the_basis: str) -> ResultKeys:
    """Keys claiming a result held ``value``."""
    return ResultKeys(basis=the_basis, hashes=_pack(sorted({_h(value)})))


@pytest.mark.parametrize(
    "bound_to",
    ["another tool", "other arguments", "another day", "another result", "another version"],
)
def test_keys_worked_out_on_anything_else_are_not_taken(
    bound_to: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, result = {"order_id": "A1"}, {"order_id": "A1", "email": "ana@example.com"}
    tool, day, made_of = "lookup", DAY, result
    if bound_to == "another tool":
        tool = "search"
    elif bound_to == "other arguments":
        args = {"order_id": "A2"}
    elif bound_to == "another day":
        day = day_of(AT + 86_400)
    elif bound_to == "another result":
        made_of = {"order_id": "A1", "email": "mallory@evil.example"}
    the_basis = basis(tool, day, args, digest(made_of))
    if bound_to == "another version":
        monkeypatch.setattr(result_keys_module, "KEYS_VERSION", result_keys_module.KEYS_VERSION + 1)
    keys = _forged("mallory@evil.example", the_basis)
    ledger = Ledger(LedgerState(session_id="s1"))
    read_in_workflow = _Counted(monkeypatch)
    ledger.record(
        call_id="c0", tool="lookup", args={"order_id": "A1"}, action="allow", ran=True, at=AT,
        result=result, keys=keys,
    )  # fmt: skip
    assert _seen_at(ledger, "mallory@evil.example") == ()  # the forged key was not taken
    assert _seen_at(ledger, "ana@example.com") == ("result:0",)  # read in the workflow instead
    assert read_in_workflow.calls == 1


def test_keys_bound_to_the_entry_are_taken_as_they_are() -> None:
    # What binds them is the entry, so keys that match it are the step's word (as its verdicts
    # are): taken without reading the result.
    args, result = {"order_id": "A1"}, {"order_id": "A1"}
    keys = _forged("vouched-by-the-step", basis("lookup", DAY, args, digest(result)))
    ledger = Ledger(LedgerState(session_id="s1"))
    ledger.record(
        call_id="c0", tool="lookup", args=args, action="allow", ran=True, at=AT, result=result,
        keys=keys,
    )  # fmt: skip
    assert _seen_at(ledger, "vouched-by-the-step") == ("result:0",)


@pytest.mark.parametrize(
    "hashes",
    ["not base64 at all!", "QUJD", "=", "AAAAA", "A" * 12, _pack([2, 1]), _pack([1, 1])],
)
def test_keys_that_are_not_what_a_step_packs_are_read_again(hashes: str) -> None:
    # Not base64, not whole 8-byte hashes, not sorted each once: not a step's, so read again.
    args, result = {"q": "x"}, {"answer": "KB-1234567"}
    keys = ResultKeys(basis=basis("t", DAY, args, digest(result)), hashes=hashes)
    assert taken(keys, _Entry("t", args, digest(result)), DAY) is None
    good = ResultKeys(basis=keys.basis, hashes=_pack([1, 2]))
    assert taken(good, _Entry("t", args, digest(result)), DAY) == ([1, 2], None)


class _Entry:
    def __init__(self, tool: str, args: Any, result_digest: str) -> None:
        self.tool, self.args, self.result_digest = tool, args, result_digest


def _numbers_of(ledger: Ledger, source: str = "result:0") -> list[float]:
    return _noted(ledger)[1].get(source, [])


def _one_call(keys: ResultKeys | None, args: Any, result: Any) -> Ledger:
    ledger = Ledger(LedgerState(session_id="s1"))
    ledger.record(
        call_id="c0", tool="t", args=args, action="allow", ran=True, at=AT, result=result,
        keys=keys,
    )  # fmt: skip
    return ledger


_PRICED = {"order": "A7", "note": "It was charged twice: $1,250.40 and then $99 more.", "n": 3}


def test_the_numbers_the_step_sends_are_taken_without_reading_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = {"q": "x"}
    the_basis = basis("t", DAY, args, digest(_PRICED))
    keys = ResultKeys(basis=the_basis, hashes=_pack([1, 2]), numbers="7.0,8.5,-0.0")
    read_in_workflow = _Counted(monkeypatch)
    assert _numbers_of(_one_call(keys, args, _PRICED)) == [7.0, 8.5, 0.0]
    assert read_in_workflow.calls == read_in_workflow.numbers == 0
    # A step's own keys carry what reading the result finds.
    made = result_keys(_PRICED, args, "t", DAY)
    assert made.unpacked_numbers() == [1250.4, 99.0, 3.0]
    assert _numbers_of(_one_call(made, args, _PRICED)) == [1250.4, 99.0, 3.0]
    assert read_in_workflow.numbers == 0


@pytest.mark.parametrize(
    "numbers",
    [None, "seven", "1,,2", "1;2", ",".join(["1.0"] * 65), "[1.0]", " "],
    ids=["an earlier step's", "no float", "empty part", "other separator", "too many",
         "JSON", "blank"],
)  # fmt: skip
def test_numbers_not_sent_or_not_a_steps_are_read_from_the_result(
    numbers: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hashes are taken (they are the step's), the numbers read in the workflow as before.
    args = {"q": "x"}
    good = result_keys(_PRICED, args, "t", DAY)
    keys = ResultKeys(basis=good.basis, hashes=good.hashes, numbers=numbers)
    read_in_workflow = _Counted(monkeypatch)
    assert _numbers_of(_one_call(keys, args, _PRICED)) == [1250.4, 99.0, 3.0]
    assert (read_in_workflow.calls, read_in_workflow.numbers) == (0, 1)


@pytest.mark.parametrize(
    "noted",
    [
        {"basis": "b", "hashes": "AAAAAAAAAAA=", "numbers": [1.0, 2.0]},
        {"basis": "b", "hashes": ["AAAAAAAAAAA="]},
        {"basis": 7, "hashes": "AAAAAAAAAAA="},
        {"hashes": "AAAAAAAAAAA="},
        "keys",
    ],
    ids=["numbers a list", "hashes a list", "basis a number", "no basis", "a text"],
)
def test_keys_of_another_shape_leave_the_result_to_the_workflow(noted: Any) -> None:
    """A step's output whose keys this version cannot read (a foreign or newer worker) decodes,
    with no keys: the workflow reads the result itself. Before, the output failed to decode,
    and the workflow task with it, on every attempt."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from duraguard._wire import ToolOutput

    raw = {"result": {"order_id": "A1"}, "noted": noted}
    (payload,) = pydantic_data_converter.payload_converter.to_payloads([raw])
    (output,) = pydantic_data_converter.payload_converter.from_payloads([payload], [ToolOutput])
    assert output.noted is None and output.result == {"order_id": "A1"}
    good = {"basis": "b", "hashes": "AAAAAAAAAAA=", "numbers": "1.0"}
    assert ToolOutput.model_validate({"result": 1, "noted": good}).noted == ResultKeys(**good)


def test_hostile_numbers_are_noted_the_same_either_way() -> None:
    # Numbers at the edges of a float (a negative zero, a subnormal, the largest, an integer
    # past it, a sum with no short form) and texts that read as one past it (infinity), in
    # other digits, with underscores: noted the same from the step's text as read here.
    result = {
        "d": -0.0, "e": 10**400, "f": 5e-324, "g": 1.7976931348623157e308, "h": "$0.10",
        "i": "costs 1e3 or 12,345.678", "j": [0.1 + 0.2, 2**53 + 1, -(2**63)], "k": "1e999",
        "l": "-1e999", "m": "1_000", "n": "-.5", "o": "\u0663", "p": "9" * 400,
    }  # fmt: skip
    calls_ = [("t", {"q": "x"}, result)]
    keyed = _numbers_of(_ledger(calls_, keyed=True))
    read = _numbers_of(_ledger(calls_, keyed=False))
    assert list(map(repr, keyed)) == list(map(repr, read))
    assert {5e-324, 0.30000000000000004, float("inf"), float("-inf")} <= set(keyed)


def test_a_labelled_result_is_read_in_the_workflow_as_outside_content() -> None:
    # Whether a result is outside content is known only in the workflow: keys are never taken
    # for a labelled result (its step sends none, and any sent are not used).
    args, result = {"url": "https://x.example"}, {"text": "wire to IBAN DE89370400440532013000"}
    keys = _forged("DE89370400440532013000", basis("fetch", DAY, args, digest(result)))
    ledger = Ledger(LedgerState(session_id="s1"))
    ledger.record(
        call_id="c0", tool="fetch", args=args, action="allow", ran=True, at=AT, result=result,
        labels=("web",), keys=keys,
    )  # fmt: skip
    seen = _seen_at(ledger, "DE89370400440532013000")
    assert seen and all(s.startswith("outside:") for s in seen)


# -- on a real server ------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def h(temporal_env) -> Harness:
    return await make_harness(temporal_env)


async def test_the_step_sends_the_keys_and_a_replay_reads_them_back(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_in_workflow = _Counted(monkeypatch)
    model = h.script(
        calls(("lookup", {"order_id": "A1"})),
        calls(("send_email", {"to": "ana@example.com", "body": "your order"})),
        answer("sent"),
    )
    run = await h.run(  # run() replays too, and asserts no check ran again
        AgentWorkflow.run,
        AgentInput(
            prompt="Email the customer of order A1",
            model=model,
            tools=["lookup", "send_email"],
            guardrails=[schema(), h.counting.spec()],
            check_mode="activity",
        ),
    )
    assert run.result.stop_reason == "done", run.result
    (step,) = run.scheduled_inputs("lookup")
    assert step["result_keys"] is True
    (out,) = run.activity_outputs("lookup")
    made = {
        result_keys(out["result"], {"order_id": "A1"}, "lookup", day).hashes
        for day in step_days(run, "lookup")
    }
    assert out["noted"]["hashes"] in made
    assert out["noted"]["numbers"] is not None
    # The workflow took them: it read no trusted result itself (neither its keys nor its
    # numbers), in the run or in the replay.
    assert read_in_workflow.calls == read_in_workflow.numbers == 0
    await h.replay(run.history)
    assert read_in_workflow.calls == read_in_workflow.numbers == 0
    # And they vouch as a reading would: the email came from call 0's result.
    (email,) = (
        subject
        for step in run.scheduled_inputs("duraguard.check")
        for subject in step["subjects"]
        if subject.get("tool") == "send_email"
    )
    seen = {p["path"]: p["sources"] for p in email["session"]["provenance"]}
    assert seen["#/to"] == ["result:0"]


def step_days(run: Any, activity_type: str) -> set[str]:
    """The days a step of ``activity_type`` may have worked its keys out on: that of its
    completion, and of a minute before (a step across midnight)."""
    done, *_ = completions(run.history, activity_type)
    at = done.event_time.ToDatetime().timestamp()
    return {day_of(at), day_of(at - 60)}


async def test_a_labelled_tool_step_sends_no_keys(h: Harness) -> None:
    model = h.script(calls(("fetch", {"url": "https://news.example/a"})), answer("read it"))
    run = await h.run(
        AgentWorkflow.run,
        AgentInput(prompt="Read the page", model=model, tools=["fetch"], guardrails=[schema()]),
    )
    (out,) = run.activity_outputs("fetch")
    assert "noted" not in out  # left out, as an earlier version writes the output


async def test_keys_that_cannot_be_worked_out_leave_the_result_whole(
    h: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import duraguard._tool_step as tool_step

    def broken(*a: Any, **kw: Any) -> ResultKeys:
        raise RecursionError("too deep to read")

    monkeypatch.setattr(tool_step, "result_keys", broken)
    read_in_workflow = _Counted(monkeypatch)
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00"))
    with caplog.at_level(logging.WARNING, logger="duraguard._tool_step"):
        run = await h.run(
            AgentWorkflow.run,
            AgentInput(prompt="What is A1?", model=model, tools=["lookup"], guardrails=[schema()]),
        )
    assert run.result.stop_reason == "done"
    (out,) = run.activity_outputs("lookup")
    assert "noted" not in out and out["result"]["order_id"] == "A1"
    assert read_in_workflow.calls >= 1  # the workflow read the result itself
    assert any("were not worked out in its step" in r.getMessage() for r in caplog.records)


async def test_a_run_with_the_patch_held_back_reads_its_results_in_the_workflow(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rolling upgrade from the version before: with its patch held back, a new run asks no
    step for keys, and no step sends any (a worker of that version reads both); the workflow
    reads each result itself, and the history replays on the upgraded code."""
    from temporalio.worker import Worker

    from duraguard._patches import MASK_BEFORE_HISTORY

    def hold(info: Any) -> bool:
        return not info.patch_id.startswith(
            ("duraguard.result-keys", "duraguard.kept-results", "duraguard.rest-in-steps")
        )

    read_in_workflow = _Counted(monkeypatch)
    tq = f"tq-held-{uuid.uuid4().hex[:8]}"
    model = h.script(calls(("lookup", {"order_id": "A1"})), answer("Order A1 is 20.00"))
    async with Worker(
        h.client, task_queue=tq, workflows=list(h.workflows), patch_activation_callback=hold
    ):
        handle = await h.start(
            AgentWorkflow.run,
            AgentInput(prompt="What is A1?", model=model, tools=["lookup"], guardrails=[schema()]),
            task_queue=tq,
        )
        result = await handle.result()
    assert result.stop_reason == "done"
    history = await handle.fetch_history()
    markers = patch_markers(history)
    assert len(markers) == 1 and MASK_BEFORE_HISTORY in markers[0]
    ran = Run(result=result, handle=handle, history=history, task_queue=tq)
    (step,) = ran.scheduled_inputs("lookup")
    (out,) = ran.activity_outputs("lookup")
    assert "result_keys" not in step and "noted" not in out
    assert read_in_workflow.calls >= 1
    read = read_in_workflow.calls
    await h.replay(history)
    assert read_in_workflow.calls > read  # the replay reads the result again, as the run did


@pytest.mark.parametrize("size", [10, 64 * 1024])
async def test_a_large_results_keys_are_worked_out_off_the_event_loop(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import duraguard
    import duraguard._tool_step as tool_step

    threads: list[int] = []
    original = tool_step.result_keys

    def recorded(*a: Any, **kw: Any) -> ResultKeys:
        threads.append(threading.get_ident())
        return original(*a, **kw)

    monkeypatch.setattr(tool_step, "result_keys", recorded)

    @duraguard.tool(kind="read")
    def listing() -> dict[str, Any]:
        """A listing."""
        return {}

    rows = {"rows": [f"KB-{i:07d}" for i in range(40)]}
    asked = ToolInvocation(call_id="c1", args={}, result_keys=True)
    keys = await tool_step._noted(listing, rows, asked, {}, size)
    assert keys == result_keys(rows, {}, "listing", day_of(time.time()))
    on_loop = threads == [threading.get_ident()]
    assert on_loop == (size < tool_step.KEYS_IN_A_THREAD)


def test_the_keys_go_first_where_the_output_would_be_over_its_bound() -> None:
    # The tool ran: an output over the bound would lose its result (not retried). The keys
    # are dropped first, and the workflow then reads the result itself.
    import duraguard
    import duraguard._tool_step as tool_step
    from duraguard._types import PassResult, Verdict
    from duraguard._wire import ToolOutput

    @duraguard.tool(kind="read")
    def page() -> dict[str, Any]:
        """A page."""
        return {}

    keys = ResultKeys(basis="b" * 32, hashes=_pack(list(range(1, 4097))))
    room = tool_step.MAX_OUTPUT_BYTES - len(ToolOutput(noted=None).model_dump_json())
    masked = PassResult(verdict=Verdict.allow(), replaced=True, value="x" * (room - 1_000))
    out = ToolOutput(result=None, judged=masked, noted=keys)
    assert len(out.model_dump_json()) > tool_step.MAX_OUTPUT_BYTES
    kept = tool_step._bounded(page, out, 1_000_000)
    assert kept.noted is None and kept.judged == masked
    small = ToolOutput(result=None, judged=masked.model_copy(update={"value": "x"}), noted=keys)
    assert tool_step._bounded(page, small, 1_000_000).noted == keys


def test_the_keys_a_reading_gives_are_pinned() -> None:
    # A change to what a trusted result is noted under changes these: raise KEYS_VERSION with
    # it (hashes a step of another version made are then read again, never mixed), then pin
    # the new ones here.
    result = {
        "id": "KB-0001234",
        "title": "Refund policy for Enterprise",
        "url": "https://kb.example.com/a/12?ref=x",
        "snippet": "Order A77 was charged twice on Saturday 18th; email ana@example.com.",
        "amount": 150.5,
        "when": "2026-11-28",
        "rows": [3, "twelve dollars", {"Zürich Office": "ok"}],
    }
    keys = result_keys(result, {"q": "refund"}, "search", "2026-12-04")
    assert result_keys_module.KEYS_VERSION == 1
    unpacked = keys.unpacked()
    assert unpacked is not None and len(unpacked) == PINNED_COUNT
    assert hashlib.sha256(keys.hashes.encode()).hexdigest()[:16] == PINNED_HASHES
    assert keys.numbers == "150.5,3.0"  # the amount, then the row's number ("18th" is a date)


PINNED_COUNT = 74
PINNED_HASHES = "495c8f4621bfdbf6"


def test_the_unicode_data_text_is_folded_by_is_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import unicodedata

    args, result = {"q": "x"}, {"a": "Straße"}
    made = basis("t", DAY, args, digest(result))
    monkeypatch.setattr(result_keys_module, "unicodedata", _Unidata(unicodedata, "99.0.0"))
    assert basis("t", DAY, args, digest(result)) != made


class _Unidata:
    def __init__(self, real: Any, version: str) -> None:
        self._real, self.unidata_version = real, version

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _round_trip(value: Any, typ: type) -> Any:
    """``value`` through Temporal's pydantic converter, as a step's input or output travels."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    pc = pydantic_data_converter.payload_converter
    (p,) = pc.to_payloads([value])
    (out,) = pc.from_payloads([p], [typ])
    return out


class _Judging:
    """A worker's checks that give one verdict on the result (what a step asks of them)."""

    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict

    def with_guardrails(self, invocation: Any) -> Any:
        return invocation

    async def check_inline(self, invocation: Any) -> Any:
        return ()

    async def judge_result(self, invocation: Any, tool: Any, value: Any) -> Any:
        return self.verdict


@pytest.mark.parametrize("case", ["allowed", "masked", "rewritten with a date", "refused"])
async def test_a_judged_result_is_noted_as_the_workflow_shows_it(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime

    from temporalio.testing import ActivityEnvironment

    import duraguard
    from duraguard._after import _shown
    from duraguard._outcome import CallOutcome
    from duraguard._tool_step import tool_activity
    from duraguard._types import PassResult, Verdict
    from duraguard._wire import ToolInvocation, ToolOutput
    from duraguard.guardrail import GuardrailSpec

    @duraguard.tool(kind="read")
    def lookup(order_id: str) -> dict[str, Any]:
        """Look up."""
        return {"order_id": order_id, "email": "ana@example.com"}

    verdict = {
        "allowed": PassResult(verdict=Verdict.allow()),
        "masked": PassResult(
            verdict=Verdict(action="mask", by="g"), replaced=True,
            value={"order_id": "A1", "email": "[masked]", "note": "KB-7654321"},
        ),
        "rewritten with a date": PassResult(
            verdict=Verdict(action="rewrite", by="g"), replaced=True,
            value={"when": datetime.date(2026, 6, 1), "ref": "KB-7654321"},
        ),
        "refused": PassResult(verdict=Verdict(action="deny", by="g", reason="no")),
    }[case]  # fmt: skip
    spec = GuardrailSpec(kind="custom", name="g", placements=("tool-result",))
    args = {"order_id": "A1"}
    invocation = ToolInvocation(
        call_id="c0", args=args, result_keys=True, result_guardrails=(spec,)
    )
    step = tool_activity(lookup, _Judging(verdict))
    out = await ActivityEnvironment().run(step, _round_trip(invocation, ToolInvocation))
    out = _round_trip(out, ToolOutput)
    base = CallOutcome(call_id="c0", tool="lookup", args=args, ran=True, result=out.result)
    shown = _shown(type("Session", (), {"note_pass": lambda self, j: None})(), base, out.judged)
    assert (out.noted is None) == (case == "refused")
    states = []
    for keys in (out.noted, None):
        read_in_workflow = _Counted(monkeypatch)
        ledger = Ledger(LedgerState(session_id="s1"))
        ledger.record(
            call_id="c0", tool="lookup", args=args, action="allow", ran=True, at=time.time(),
            result=shown.result, keys=keys,
        )  # fmt: skip
        states.append(ledger.state.sources)
        if keys is not None:
            assert read_in_workflow.calls == 0  # taken: the replacement as the workflow reads it
    assert states[0] == states[1]
