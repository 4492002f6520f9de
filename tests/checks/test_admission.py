"""Admission: who may reach a tool at all, decided from (principal, agent, tool)."""

from __future__ import annotations

from duraguard._admit import admit, admit_many
from duraguard._types import Subject, Verdict
from duraguard.checks import AdmissionRegistry, agents, pii
from duraguard.checks.admission import admission_subject
from duraguard.guardrail import Guardrail, Resources, guardrail
from duraguard.tools import tool

PAYMENTS = agents(allow=["payments", "billing"], tools=["refund_card", "charge_*"])


async def test_agents_admits_an_allowed_agent() -> None:
    verdict = await admit([PAYMENTS], "ana", "payments", "refund_card")
    assert verdict.action == "allow"


async def test_agents_refuses_another_agent_naming_tool_caller_and_allowed() -> None:
    verdict = await admit([PAYMENTS], "ana", "support", "charge_card")
    assert verdict.action == "deny"
    assert verdict.by == "agents"
    assert verdict.reason == (
        "tool 'charge_card' may not be called by agent 'support'; agents allowed: payments, billing"
    )


async def test_agents_refuses_a_direct_call_with_no_agent() -> None:
    verdict = await admit([PAYMENTS], "ana", None, "refund_card")
    assert verdict.action == "deny"
    assert "a direct call (no agent)" in (verdict.reason or "")


async def test_agents_leaves_other_tools_alone() -> None:
    assert (await admit([PAYMENTS], "ana", "support", "lookup_order")).action == "allow"


async def test_admission_skips_guardrails_of_other_placements() -> None:
    # The loop may hand admit() its whole list: pii and a tool-args function never judge {"tool"}.
    @guardrail(placements=("tool-args",))
    def never(subject: Subject) -> bool:
        return False

    verdict = await admit([pii(action="deny"), never, PAYMENTS], "ana", "payments", "refund_card")
    assert verdict.action == "allow"


async def test_admission_skips_a_guardrail_left_on_the_everywhere_default() -> None:
    class Legacy(Guardrail):
        name = "legacy"

        async def check(self, subject: Subject) -> Verdict:
            return Verdict.deny("written for tool arguments, not admission")

    assert (await admit([Legacy()], "ana", "support", "refund_card")).action == "allow"


async def test_admission_honours_the_tools_own_agents_list() -> None:
    @tool(agents=["payments"])
    def refund_card(order_id: str, amount: float) -> dict[str, object]:
        return {}

    resources = Resources(tools={"refund_card": refund_card})
    ok = await admit([], "ana", "payments", "refund_card", resources)
    no = await admit([], "ana", "support", "refund_card", resources)
    assert ok.action == "allow"
    assert no.action == "deny" and no.by == "tool-agents"


async def test_registry_attaches_admission_to_tools_by_pattern() -> None:
    registry = AdmissionRegistry()
    registry.register(agents(allow=["ops"], name="ops-only"), tools=["admin_*"])
    refused = await admit([], "ana", "support", "admin_reset", registry=registry)
    other = await admit([], "ana", "support", "lookup_order", registry=registry)
    assert refused.action == "deny" and refused.by == "ops-only"
    assert other.action == "allow"


async def test_registry_attaches_admission_by_predicate() -> None:
    registry = AdmissionRegistry()
    registry.register(agents(allow=["mailer"], name="mail-only"), when=lambda t: "email" in t)
    assert (await admit([], "ana", "support", "send_email", registry=registry)).action == "deny"
    assert (await admit([], "ana", "mailer", "send_email", registry=registry)).action == "allow"


async def test_registry_predicate_that_raises_refuses_the_tool() -> None:
    registry = AdmissionRegistry()

    def broken(tool_name: str) -> bool:
        raise RuntimeError("catalogue offline")

    registry.register(agents(allow=["x"]), when=broken)
    verdict = await admit([], "ana", "x", "lookup", registry=registry)
    assert verdict.action == "deny" and verdict.outcome == "partial"


def test_registry_needs_a_pattern_or_predicate_and_an_admission_guardrail() -> None:
    import pytest

    from duraguard.errors import ConfigurationError

    registry = AdmissionRegistry()
    with pytest.raises(ConfigurationError, match='tools="\\*"'):
        registry.register(agents(allow=["x"]))
    with pytest.raises(ConfigurationError, match="placement 'admission'"):
        registry.register(pii(), tools="*")


async def test_admission_guardrail_reads_the_principal() -> None:
    @guardrail(name="interns-read-only", placements=("admission",))
    def interns(subject: Subject) -> Verdict | None:
        if subject.context.principal == "intern" and subject.value["tool"].startswith("write_"):
            return Verdict.deny(f"interns may not reach {subject.tool!r}")
        return None

    verdicts = await admit_many([interns], "intern", "support", ["read_doc", "write_doc"])
    assert [v.action for v in verdicts.values()] == ["allow", "deny"]


async def test_admission_guardrail_that_raises_refuses() -> None:
    @guardrail(name="flaky", placements=("admission",))
    def flaky(subject: Subject) -> bool:
        raise ConnectionError("rights service down")

    verdict = await admit([flaky], "ana", "support", "lookup")
    assert verdict.action == "deny" and verdict.outcome == "partial"


def test_admission_subject_carries_no_arguments() -> None:
    s = admission_subject("ana", "support", "refund_card")
    assert (s.placement, s.value, s.tool) == ("admission", {"tool": "refund_card"}, "refund_card")
    assert (s.context.principal, s.context.agent) == ("ana", "support")
