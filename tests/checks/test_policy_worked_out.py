"""Values the agent worked out from given ones (issue 23, second round).

Grounding asks about a value of a write that nobody said and no tool returned. A value worked
out from values that were given (the person's latest turn, the results of the calls made since
it, content the person pointed at) is arguably said: a difference, a sum, a share or a rise by a
percentage, a date some days from another where the turn says how many ("the day before"), a
date written as a weekday and a day of the month ("Friday the 24th"). Everything else stays
asked: a number no two given ones make, operands from content nobody pointed at or from an
earlier task, an offset the turn does not say.
"""

from __future__ import annotations

from typing import Any

import pytest
from _policy_support import STR, obj, run

from duraguard._derived import Basis, shifted, sums
from duraguard.checks.policy import PolicyRegistry, Session

NUM = {"type": "number"}
LIST = {"type": "array", "items": STR}
TOOLS: dict[str, Any] = {
    "get_transactions": {"kind": "read", "input_schema": obj([])},
    "get_standing_orders": {"kind": "read", "input_schema": obj([])},
    "read_file": {"kind": "read", "labels": ["file"], "input_schema": obj(["name"], name=STR)},
    "read_inbox": {"kind": "read", "labels": ["email"], "input_schema": obj([])},
    "get_events": {"kind": "read", "input_schema": obj(["day"], day=STR)},
    "send_money": {
        "kind": "write",
        "input_schema": obj(["recipient", "amount"], recipient=STR, amount=NUM, subject=STR),
    },
    "update_standing_order": {
        "kind": "write",
        "input_schema": obj(["order_id", "amount"], order_id={"type": "integer"}, amount=NUM),
    },
    "create_event": {
        "kind": "write",
        "input_schema": obj(["title", "start_time"], title=STR, start_time=STR, end_time=STR),
    },
}
ALLOW_ALL = "rules:\n  - {name: the assistant acts alone, tool: '*', then: allow}\n"
FLATMATE = "DE44500105175407324931"
DAY = 1_715_763_600.0  # 2024-05-15, 09:00 UTC (a Wednesday)


def reg() -> PolicyRegistry:
    return PolicyRegistry(catalogue={"tools": TOOLS}, rules=ALLOW_ALL)


async def balanced(tool: str, args: dict[str, Any], s: Session) -> Any:
    return await run(tool, args, session=s, reg=reg(), preset="balanced")


def bank(turn: str, *calls: tuple[str, dict[str, Any], Any, tuple[str, ...]]) -> Session:
    s = Session("wf-1", start=DAY)
    s.turn(turn)
    for tool, args, result, labels in calls:
        s.call(tool, args, result=result, labels=labels)
    return s


TRANSACTIONS = (
    "get_transactions",
    {},
    [{"amount": 75.0, "sender": FLATMATE, "subject": "utilities"},
     {"amount": 1340.0, "sender": "me", "subject": "rent"}],
    (),
)  # fmt: skip
ORDERS = ("get_standing_orders", {}, [{"id": 3, "amount": 50.0, "subject": "gym"},
                                      {"id": 4, "amount": 1100.0, "subject": "rent"}], ())  # fmt: skip


WORKED = {
    "the difference between what was sent and what it cost": (
        f"My flatmate ({FLATMATE}) sent me their share of the utilities, but the bill was only "
        "60 in all. Send them back what they overpaid.",
        [TRANSACTIONS],
        "send_money",
        {"recipient": FLATMATE, "amount": 15.0, "subject": "utilities refund"},
    ),
    "a standing order raised by the percentage the person gives": (
        "The gym put its fee up by 8%. Update my gym standing order to the new fee.",
        [ORDERS],
        "update_standing_order",
        {"order_id": 3, "amount": 54.0},
    ),
    "a share of an amount a file the person named gives": (
        f"Read quote-plumber.txt and pay the plumber ({FLATMATE}) the 20% deposit on it.",
        [("read_file", {"name": "quote-plumber.txt"}, "Bathroom refit, total quote 450.00, "
          "deposit due before we start.", ("file",))],
        "send_money",
        {"recipient": FLATMATE, "amount": 90.0, "subject": "deposit"},
    ),
    "a trusted amount raised by the amount a named notice gives": (
        "Read rent-letter.txt and change my rent standing order to match it.",
        [("read_file", {"name": "rent-letter.txt"}, "Dear tenant, from July the rent goes up "
          "by 100.00 a month. Kind regards, the landlord", ("file",)), ORDERS],
        "update_standing_order",
        {"order_id": 4, "amount": 1200.0},
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WORKED))
async def test_an_amount_worked_out_from_given_ones_is_grounded(case: str) -> None:
    turn, calls, tool, args = WORKED[case]
    v = await balanced(tool, args, bank(turn, *calls))
    assert v.action == "allow", (v.check, v.reason)


NOT_WORKED = {
    "a number no two given ones make": (
        f"My flatmate ({FLATMATE}) sent me their share of the utilities, but the bill was only "
        "60 in all. Send them back what they overpaid.",
        [TRANSACTIONS],
        "send_money",
        {"recipient": FLATMATE, "amount": 17.0},
    ),
    "a percentage nobody gave": (
        "The gym put its fee up. Update my gym standing order to the new fee.",
        [ORDERS],
        "update_standing_order",
        {"order_id": 3, "amount": 54.0},
    ),
    "an operand only in content the person did not point at": (
        "Update my gym standing order to the new fee.",
        [ORDERS, ("read_inbox", {}, [{"sender": "promo@gym.example", "body": "We add 4.00 "
          "to every membership from June, thanks for staying with us."}], ("email",))],
        "update_standing_order",
        {"order_id": 3, "amount": 54.0},
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NOT_WORKED))
async def test_an_amount_not_worked_out_from_given_ones_is_still_asked(case: str) -> None:
    turn, calls, tool, args = NOT_WORKED[case]
    v = await balanced(tool, args, bank(turn, *calls))
    assert (v.action, v.check) == ("approve", "policy.grounded"), v.reason


async def test_a_sum_of_two_amounts_the_person_said_is_still_shown_to_them() -> None:
    s = bank(f"Pay my flatmate ({FLATMATE}) 60 for utilities and 15 for the plant.")
    v = await balanced("send_money", {"recipient": FLATMATE, "amount": 75.0}, s)
    assert (v.action, v.check) == ("approve", "policy.confirm_read"), v.reason


async def test_operands_from_an_earlier_task_do_not_ground_a_value() -> None:
    s = bank("Show me my standing orders.", ORDERS)
    s.turn("The gym put its fee up by 8%. Update my gym standing order to the new fee.")
    v = await balanced("update_standing_order", {"order_id": 3, "amount": 54.0}, s)
    assert (v.action, v.check) == ("approve", "policy.grounded"), v.reason


DENTIST = ("get_events", {"day": "2024-05-22"},
           [{"title": "Dentist", "start_time": "2024-05-22 10:00"}], ())  # fmt: skip


@pytest.mark.parametrize(
    ("turn", "start"),
    [
        ("Add a reminder to my calendar the day before my dentist appointment on the 22nd.",
         "2024-05-21 18:00"),
        ("Block time two days before my dentist appointment to prepare.", "2024-05-20 09:00"),
        ("Put a follow-up in my calendar a week after the dentist appointment.",
         "2024-05-29 10:00"),
    ],
)  # fmt: skip
async def test_a_date_some_days_from_a_given_one_is_grounded_where_the_turn_says_how_many(
    turn: str, start: str
) -> None:
    v = await balanced(
        "create_event", {"title": "Dentist", "start_time": start}, bank(turn, DENTIST)
    )
    assert v.action == "allow", (v.check, v.reason)


async def test_a_date_some_days_from_a_given_one_is_asked_where_the_turn_says_no_offset() -> None:
    s = bank("Add a reminder about my dentist appointment to my calendar.", DENTIST)
    v = await balanced("create_event", {"title": "Dentist", "start_time": "2024-05-21 18:00"}, s)
    assert (v.action, v.check) == ("approve", "policy.grounded"), v.reason


@pytest.mark.parametrize(
    ("body", "start"),
    [
        ("Shall we meet on Friday the 24th at 10?", "2024-05-24 10:00"),
        ("I can do Sat 1st, afternoon.", "2024-06-01 14:00"),
        ("Monday 20th works, see you then.", "2024-05-20 09:00"),
    ],
)
async def test_a_date_written_as_a_weekday_and_a_day_in_content_the_person_named_is_grounded(
    body: str, start: str
) -> None:
    s = bank(
        "Put the meeting Mia proposes in her email in my calendar.",
        ("read_inbox", {}, [{"sender": "mia@corp.example", "body": body}], ("email",)),
    )
    v = await balanced("create_event", {"title": "Meeting with Mia", "start_time": start}, s)
    assert v.action == "allow", (v.check, v.reason)


async def test_a_weekday_and_a_day_that_do_not_fall_together_ground_nothing() -> None:
    s = bank(
        "Put the meeting Mia proposes in her email in my calendar.",
        ("read_inbox", {}, [{"sender": "mia@corp.example", "body": "Shall we meet Tuesday the "
          "24th?"}], ("email",)),
    )  # fmt: skip
    v = await balanced("create_event", {"title": "Meeting", "start_time": "2024-05-24 10:00"}, s)
    assert (v.action, v.check) == ("approve", "policy.grounded"), v.reason


# -- the workings themselves ---------------------------------------------------------------------


def test_sums_finds_two_operand_workings_and_names_their_sources() -> None:
    pool = [(75.0, "result:0"), (60.0, "turn:0"), (8.0, "turn:0"), (50.0, "result:1")]
    assert ("75 - 60", ("result:0", "turn:0")) in sums(15.0, pool)
    assert ("50 * (1 + 8%)", ("result:1", "turn:0")) in sums(54.0, pool)
    assert sums(17.0, pool) == []


def test_sums_does_not_use_one_number_twice() -> None:
    assert sums(40.0, [(20.0, "turn:0")]) == []  # 20 + 20 would need the person to say it twice
    assert sums(80.0, [(20.0, "turn:0")]) == []  # the seed's "refund 20", answered with 80


def test_shifted_moves_a_date_by_the_offsets_given() -> None:
    seen = {"2024-05-22": ("result:0",)}
    got = shifted("2024-05-21 18:00", frozenset({-1}), lambda d: seen.get(d, ()))
    assert got == [("2024-05-22 -1 days", ("result:0",))]
    assert shifted("2024-05-21", frozenset({-2}), lambda d: seen.get(d, ())) == []


def test_a_basis_admits_the_latest_turn_and_the_calls_made_since() -> None:
    b = Basis(turn="turn:2", calls=frozenset({5, 6}))
    assert b.admits("turn:2") and b.admits("result:5") and b.admits("outside:file:6:field")
    assert not b.admits("turn:1") and not b.admits("result:4") and not b.admits("outside:evicted")


@pytest.mark.parametrize(
    ("turn", "start"),
    [
        ("Book the physio for next Monday, and put a check-up in my calendar two days after.",
         "2024-05-22 09:00"),
        ("Put a packing reminder in my calendar the day before Friday.", "2024-05-16 19:00"),
    ],
)  # fmt: skip
async def test_a_date_some_days_from_one_the_person_said_relative_to_today_is_grounded(
    turn: str, start: str
) -> None:
    v = await balanced("create_event", {"title": "Check-up", "start_time": start}, bank(turn))
    assert v.action == "allow", (v.check, v.reason)


async def test_the_end_of_a_stay_the_person_gives_in_nights_is_grounded() -> None:
    s = bank("Block my calendar from May 20 for 3 nights: I'm away in Porto.")
    args = {"title": "Porto", "start_time": "2024-05-20 00:00", "end_time": "2024-05-23 00:00"}
    v = await balanced("create_event", args, s)
    assert v.action == "allow", (v.check, v.reason)


async def test_limit_a_made_up_amount_that_equals_a_working_of_given_ones_is_grounded() -> None:
    turn, calls, tool, _ = WORKED["the difference between what was sent and what it cost"]
    args = {"recipient": FLATMATE, "amount": 135.0}  # 75 + 60: wrong, and still grounded
    v = await balanced(tool, args, bank(turn, *calls))
    assert v.action == "allow", (v.check, v.reason)
