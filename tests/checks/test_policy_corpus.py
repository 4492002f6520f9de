"""The turn-reading checks (grounding, S1, S2, confirm read) measured on a labelled corpus.

``tests/corpus/turns.jsonl`` holds realistic requests, each with a call that answers it right
(``allow``) or wrong (``ask``). A rule sheet allows every write, so only the checks of what was
said can stop a call. The numbers this test measures are reported in ``docs/policy.md``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _policy_support import STR, obj, run, said

from duraguard.checks.policy import PolicyRegistry

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "turns.jsonl"
NUM = {"type": "number"}
INT = {"type": "integer"}

TOOLS: dict[str, Any] = {
    "refund_card": {"kind": "write", "input_schema": obj(["order_id"], order_id=STR, amount=NUM)},
    "schedule_call": {
        "kind": "write",
        "input_schema": obj(
            ["customer_id"], customer_id=STR, date={"type": "string", "format": "date"}
        ),
    },
    "send_email": {
        "kind": "send",
        "input_schema": obj(
            ["to"], to={"type": "string", "format": "email"}, subject=STR, body=STR
        ),
    },
    "post_message": {"kind": "send", "input_schema": obj(["channel"], channel=STR, text=STR)},
    "send_sms": {"kind": "send", "input_schema": obj(["phone"], phone=STR, text=STR)},
    "save_note": {"kind": "write", "input_schema": obj(["text"], order_id=STR, text=STR)},
    "cancel_order": {"kind": "write", "input_schema": obj(["order_id"], order_id=STR)},
    "ship_item": {
        "kind": "write",
        "input_schema": obj(["sku"], sku=STR, quantity=INT, order_id=STR),
    },
    "update_customer": {
        "kind": "write",
        "input_schema": obj(
            ["customer_id"],
            customer_id=STR,
            email={"type": "string", "format": "email"},
            website={"type": "string", "format": "uri"},
        ),
    },
    "update_order": {
        "kind": "write",
        "input_schema": obj(["order_id"], order_id=STR, gift={"type": "boolean"}, discount=NUM),
    },
}
ALLOW_WRITES = "rules:\n  - {name: writes are fine here, tool: '*', when: [{arg: __none__, exists: false}], then: allow}\n"


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


async def measure() -> dict[str, Any]:
    reg = PolicyRegistry(catalogue={"tools": TOOLS}, rules=ALLOW_WRITES)
    false_asks, misses, rows = [], [], []
    for case in load():
        v = await run(case["tool"], case["args"], session=said(case["turn"]), reg=reg)
        got = "allow" if v.action == "allow" else "ask"
        rows.append((case, got, v.check))
        if case["expect"] == "allow" and got != "allow":
            false_asks.append((case, v.check, v.reason))
        if case["expect"] == "ask" and got == "allow":
            misses.append(case)
    allow = sum(1 for c in load() if c["expect"] == "allow")
    return {
        "cases": len(rows),
        "allow": allow,
        "ask": len(rows) - allow,
        "false_asks": false_asks,
        "misses": misses,
        "rows": rows,
    }


def test_corpus_is_big_and_balanced_enough() -> None:
    cases = load()
    assert len(cases) >= 60
    assert {c["expect"] for c in cases} == {"allow", "ask"}
    assert len({c["turn"] for c in cases}) >= 40


async def test_turn_readers_false_asks_and_misses_stay_within_the_documented_numbers() -> None:
    m = await measure()
    # docs/policy.md reports these numbers; a change to the readers must update both.
    assert len(m["false_asks"]) <= 1, [(c["turn"], c["args"], chk) for c, chk, _ in m["false_asks"]]
    assert len(m["misses"]) <= 2, [(c["turn"], c["args"]) for c in m["misses"]]


async def test_turn_readers_never_refuse_in_the_default_mode() -> None:
    m = await measure()
    assert all(check is None or check.startswith("policy.") for _, _, check in m["rows"])


if __name__ == "__main__":
    result = asyncio.run(measure())
    print(f"{result['cases']} cases ({result['allow']} right calls, {result['ask']} wrong calls)")
    print(f"false asks: {len(result['false_asks'])}")
    for c, chk, why in result["false_asks"]:
        print("  ", c["turn"], c["args"], chk, why)
    print(f"misses: {len(result['misses'])}")
    for c in result["misses"]:
        print("  ", c["turn"], c["args"])
