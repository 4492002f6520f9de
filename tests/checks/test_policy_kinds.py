"""Tool kinds inferred: verbs of effect over what a tool returns, MCP annotations with the
specification's defaults, and how sure the reading is, shown in the verdict."""

from __future__ import annotations

from typing import Any

import pytest
from _policy_support import STR, obj, run

from duraguard.checks.policy import PolicyRegistry, ToolInfo, infer, infer_kind
from duraguard.tools import tool


def kind(name: str, description: str = "", **kw: Any) -> str | None:
    return infer_kind(ToolInfo(name=name, description=description, **kw))


@pytest.mark.parametrize(
    ("name", "description", "expected"),
    [
        ("delete_file", "Deletes a file. It returns the file that was deleted.", "write"),
        ("remove_file", "It returns the file that was removed.", "write"),
        ("cleanup", "It returns the file that was deleted.", "write"),
        ("get_and_delete", "", "write"),
        ("delete_email", "", "write"),
        ("add_user_to_channel", "", "write"),
        ("update_scheduled_transaction", "", "write"),
        ("send_email", "", "send"),
        ("email_customer", "", "send"),
        ("reply_to_email", "", "send"),
        ("share_file", "", "send"),
        ("invite_user_to_slack", "", "send"),
        ("get_order", "", "read"),
        ("read_channel_messages", "", "read"),
        ("get_share_link", "", "read"),
        ("list_books", "Returns the books of the library.", "read"),
        ("lookup", "Looks up a customer. It never changes anything.", "read"),
        ("frobnicate", "", None),
        # A verb of sending used as a noun after an adjective or a possessive reads...
        ("read_inbox", "Read the newest emails in the user's inbox.", "read"),
        ("get_inbox", "Returns the user's messages, newest first.", "read"),
        ("list_unread", "Lists unread emails.", "read"),
        ("get_sent", "Shows the last messages of the thread.", "read"),
        # ...but not after a word that can be the subject of the verb.
        ("widget", "The tool emails the customer.", "send"),
        ("widget", "This emails every member of the team.", "send"),
        ("handler", "Fetches a page and posts it to the channel.", "send"),
        ("handler", "Reads the newest messages and forwards them to the user's manager.", "send"),
    ],
)
def test_verbs_of_effect_outrank_what_a_tool_returns(
    name: str, description: str, expected: str | None
) -> None:
    assert kind(name, description) == expected


def test_annotations_are_read_with_the_specification_s_defaults() -> None:
    assert kind("anything", annotations={"readOnlyHint": True}) == "read"
    assert kind("anything", annotations={}) == "send"  # not read-only, open world by default
    assert kind("anything", annotations={"openWorldHint": False}) == "write"
    assert (
        kind("anything", annotations={"read_only_hint": False, "open_world_hint": False}) == "write"
    )


def test_a_read_only_hint_does_not_hide_a_name_that_deletes() -> None:
    r = infer("delete_records", annotations={"readOnlyHint": True})
    assert r is not None and r.kind == "write" and "readOnlyHint" in r.why


CATALOGUE: dict[str, Any] = {
    "tools": {
        "delete_file": {
            "description": "Deletes the file with the given ID. It returns the file that was deleted.",
            "input_schema": obj(["file_id"], file_id=STR),
        },
        "list_files": {"annotations": {"readOnlyHint": True}, "input_schema": obj([])},
        "get_balance": {"input_schema": obj([])},
        "frobnicate": {"input_schema": obj([])},
        "marked": {"kind": "read", "input_schema": obj([])},
    }
}


async def test_an_unmarked_deleting_tool_is_asked_about_not_run_as_a_read() -> None:
    v = await run("delete_file", {"file_id": "13"}, reg=PolicyRegistry(catalogue=CATALOGUE))
    assert (v.action, v.check) == ("approve", "policy.any_other_write")
    (noted,) = [d for d in v.detections if d.rule == "policy.tool_kinds"]
    assert noted.score == 0.8 and noted.detail and "write (inferred" in noted.detail


async def test_an_inferred_read_runs_and_says_how_its_kind_was_read() -> None:
    for name, source, score in (
        ("list_files", "annotation", 0.9),
        ("get_balance", "inferred", 0.8),
    ):
        v = await run(name, {}, reg=PolicyRegistry(catalogue=CATALOGUE))
        assert v.action == "allow"
        (noted,) = v.detections
        assert noted.rule == "policy.tool_kinds" and noted.score == score
        assert noted.detail and noted.detail.startswith(f"read ({source}")


async def test_a_marked_read_carries_no_kind_note_and_an_unmarked_tool_is_a_write() -> None:
    assert (await run("marked", {}, reg=PolicyRegistry(catalogue=CATALOGUE))).detections == ()
    v = await run("frobnicate", {}, reg=PolicyRegistry(catalogue=CATALOGUE))
    assert (v.action, v.check) == ("approve", "policy.tool_kinds")
    assert any(d.detail and "nobody marked it" in d.detail for d in v.detections)


async def test_annotations_of_a_code_tool_are_read_from_its_meta() -> None:
    @tool
    def frob(x: str) -> str:
        """Does something."""
        return x

    hinted = frob.__class__(**{**frob.__dict__, "meta": {"annotations": {"readOnlyHint": True}}})
    v = await run("frob", {"x": "a"}, reg=PolicyRegistry(), tools={"frob": hinted})
    assert v.action == "allow" and v.detections[0].detail.startswith("read (annotation")
    assert (
        await run("frob", {"x": "a"}, reg=PolicyRegistry(), tools={"frob": frob})
    ).action == "approve"


async def test_inference_off_makes_every_unmarked_tool_a_write() -> None:
    v = await run("list_files", {}, reg=PolicyRegistry(catalogue=CATALOGUE), infer=False)
    assert (v.action, v.check) == ("approve", "policy.tool_kinds")
