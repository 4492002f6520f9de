"""The session record and its bounded view: hash chain, provenance, size that does not grow."""

from __future__ import annotations

from _policy_support import run

from duraguard.checks.policy import Session


def _session(n: int, sid: str = "wf-1") -> Session:
    s = Session(sid)
    s.turn("refund 20 on order A1")
    for i in range(n):
        s.call(
            "get_order" if i % 2 else "tool_x",
            {"order_id": f"A{i}"},
            result={"status": "paid", "total": i},
        )
    return s


def test_view_bytes_do_not_grow_with_the_session() -> None:
    small = len(_session(60).view("get_order", {"order_id": "A1"}).model_dump_json())
    large = len(_session(600).view("get_order", {"order_id": "A1"}).model_dump_json())
    assert large <= small * 1.1


async def test_a_reordered_record_stops_everything_after_it() -> None:
    s = _session(4)
    view = s.view("get_order", {"order_id": "A1"})
    e = list(view.entries)
    e[1], e[2] = e[2].model_copy(update={"index": 1}), e[1].model_copy(update={"index": 2})
    v = await run(
        "get_order", {"order_id": "A1"}, session=view.model_copy(update={"entries": tuple(e)})
    )
    assert (v.action, v.check) == ("deny", "policy.session_record")


async def test_a_record_replayed_from_another_session_is_refused() -> None:
    other = _session(3, sid="wf-other").view("get_order", {"order_id": "A1"})
    mine = _session(3).view("get_order", {"order_id": "A1"})
    v = await run(
        "get_order",
        {"order_id": "A1"},
        session=mine.model_copy(update={"entries": other.entries, "chain_head": other.chain_head}),
    )
    assert v.check == "policy.session_record"


async def test_an_entry_edited_in_the_ledger_itself_is_found_beyond_the_view() -> None:
    s = _session(40)
    state = s.ledger.state
    state.entries[3] = state.entries[3].model_copy(update={"args": {"order_id": "B9"}})
    v = await run("get_order", {"order_id": "A1"}, session=s)
    assert v.check == "policy.session_record" and "call 3" in (v.reason or "")


async def test_a_view_claiming_calls_it_does_not_show_is_refused_as_partial() -> None:
    view = _session(3).view("get_order", {"order_id": "A1"}).model_copy(update={"entries": ()})
    v = await run("get_order", {"order_id": "A1"}, session=view)
    assert (v.action, v.outcome) == ("deny", "partial")


def test_provenance_says_who_gave_each_value() -> None:
    s = Session("wf-1")
    s.turn("refund twenty dollars on order A1")
    s.call("fetch_page", {"url": "https://x.example"}, result={"code": "Z-77"}, labels=("web",))
    view = s.view(
        "refund_card", {"order_id": "A1", "amount": 20, "coupon": "Z-77", "note": "made up 55"}
    )
    sources = {p.path: p.sources for p in view.provenance}
    assert sources["#/order_id"] == ("turn:0",)
    assert sources["#/amount"] == ("turn:0",)  # "twenty dollars" read as 20
    # A labelled result is outside content only (never also a trusted result), named by call.
    assert sources["#/coupon"] == ("outside:web:0:field",)
    assert "#/note" not in sources  # nobody gave it: no provenance carried


def test_view_carries_the_entries_a_rule_needs() -> None:
    s = Session("wf-1")
    s.call("get_order", {"order_id": "A1"}, result={"status": "closed"})
    for i in range(30):
        s.call("tool_x", {"i": i})
    view = s.view("refund_card", {"order_id": "A1"})
    assert any(
        e.tool == "get_order" and e.result_fields == {"status": "closed"} for e in view.entries
    )
    assert view.tool_counts == {"get_order": 1, "tool_x": 30}
    assert len(view.entries) < 20
