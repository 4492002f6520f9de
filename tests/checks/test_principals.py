"""principals() and AuthGuardrail: the call's input and the person the work runs for."""

from __future__ import annotations

from typing import Any

import pytest

from duraguard._types import Verdict
from duraguard.checks import AuthGuardrail, principals
from duraguard.engine import evaluate
from duraguard.errors import ConfigurationError
from duraguard.guardrail import Resources

OPS = principals(allow=["ops-oncall", "release-manager"], tools=["deploy", "rollback_*"])


async def test_principals_lets_a_named_principal_call_the_tool() -> None:
    result = await evaluate([OPS], {}, tool="deploy", principal="ops-oncall")
    assert result.verdict.action == "allow"


async def test_principals_refuses_another_principal_naming_principal_tool_and_allowed() -> None:
    result = await evaluate([OPS], {}, tool="rollback_db", principal="ana")
    assert result.verdict.action == "deny"
    assert result.verdict.reason == (
        "principal 'ana' may not call tool 'rollback_db'; "
        "principals allowed: ops-oncall, release-manager"
    )


async def test_principals_refuses_a_run_with_no_principal() -> None:
    result = await evaluate([OPS], {}, tool="deploy")
    assert result.verdict.action == "deny"
    assert (result.verdict.reason or "").startswith(
        "a run with no principal may not call tool 'deploy'"
    )


async def test_principals_ignores_tools_it_does_not_name() -> None:
    assert not (await evaluate([OPS], {}, tool="lookup_order", principal="ana")).tripped


async def test_principals_without_tools_guards_every_tool() -> None:
    guard = principals(allow=["svc-batch"])
    assert (await evaluate([guard], {}, tool="anything", principal="ana")).tripped


async def test_principals_runs_on_the_input_side_only() -> None:
    result = await evaluate([OPS], {}, placement="tool-result", tool="deploy", principal="ana")
    assert not result.tripped


def test_principals_needs_at_least_one_principal() -> None:
    with pytest.raises(ConfigurationError, match="at least one principal"):
        principals(allow=[])


class Accounts:
    """A worker's own rights store: which accounts each principal may move money out of."""

    def __init__(self, rights: dict[str, set[str]]) -> None:
        self.rights = rights
        self.lookups: list[tuple[str, str]] = []

    async def may_debit(self, principal: str, account: str) -> bool:
        self.lookups.append((principal, account))
        return account in self.rights.get(principal, set())


class AccountOwner(AuthGuardrail, kind="test-account-owner", store="accounts"):
    """Only a principal with rights on the source account may move money out of it."""

    async def authorize(
        self, principal: str, tool: str | None, args: Any, store: Any
    ) -> str | bool:
        account = args.get("from_account")
        if await store.may_debit(principal, account):
            return True
        return f"principal {principal!r} may not move money out of account {account!r}"


def _resources(store: Accounts) -> Resources:
    return Resources(extra={"accounts": store})


async def test_auth_guardrail_reads_rights_from_the_workers_store() -> None:
    store = Accounts({"ana": {"ACC-1"}})
    spec = AccountOwner.spec_for(tools=["transfer"])
    assert spec.kind == "test-account-owner" and spec.remote
    ok = await evaluate(
        [spec],
        {"from_account": "ACC-1"},
        tool="transfer",
        principal="ana",
        resources=_resources(store),
    )
    no = await evaluate(
        [spec],
        {"from_account": "ACC-2"},
        tool="transfer",
        principal="ana",
        resources=_resources(store),
    )
    assert ok.verdict.action == "allow"
    assert no.verdict.action == "deny"
    assert no.verdict.reason == "principal 'ana' may not move money out of account 'ACC-2'"
    assert store.lookups == [("ana", "ACC-1"), ("ana", "ACC-2")]


async def test_auth_guardrail_refuses_without_a_principal_and_never_asks_the_store() -> None:
    store = Accounts({"ana": {"ACC-1"}})
    result = await evaluate(
        [AccountOwner.spec_for()],
        {"from_account": "ACC-1"},
        tool="transfer",
        resources=_resources(store),
    )
    assert result.verdict.action == "deny"
    assert "duraguard.principal" in (result.verdict.reason or "")
    assert store.lookups == []


async def test_auth_guardrail_with_its_store_missing_fails_closed_naming_the_store() -> None:
    result = await evaluate(
        [AccountOwner.spec_for()], {"from_account": "ACC-1"}, tool="transfer", principal="ana"
    )
    assert result.verdict.action == "deny"
    assert result.verdict.outcome == "partial"
    assert "'accounts'" in (result.verdict.reason or "")


async def test_auth_guardrail_can_return_a_full_verdict() -> None:
    class Escalate(AuthGuardrail, kind="test-escalate"):
        async def authorize(
            self, principal: str, tool: str | None, args: Any, store: Any
        ) -> Verdict:
            return Verdict.approve(f"{principal} needs a manager for {tool}", role="manager")

    result = await evaluate([Escalate.spec_for()], {}, tool="refund", principal="bo")
    assert result.verdict.action == "approve"
    assert result.verdict.ask is not None and result.verdict.ask.role == "manager"


async def test_auth_guardrail_instance_crosses_as_a_spec_of_its_kind() -> None:
    spec = AccountOwner(settings=None).spec()
    assert spec.kind == "test-account-owner"
    assert spec.placements == ("tool-args",)


def test_auth_guardrail_kind_without_authorize_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="must implement authorize"):

        class Broken(AuthGuardrail, kind="test-broken"):  # type: ignore[abstract]
            pass
