"""Issue 24, class 5: who may say yes is neither capped nor frozen at the worker's start.

* With 70 people holding the role an ask needs, the yes of the 65th (and the 70th) counts: an
  ask records its approvers' fingerprints where they are more than it records keys for, and a
  decision carries its signer's key. A forged one is still refused in workflow code, with no
  step. (Before, an ask recorded 64 keys and the 65th person's valid yes was refused.)
* The approvers file is read live: a person removed from it, or whose role is taken away, is
  refused for an ask already parked, without a restart, while a remaining person's yes counts;
  a file that stops reading counts nobody's yes until it is fixed. (Before, it was read once
  when the worker started.)

Each run replays with no check run again.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError

from duraguard import ApproverKeys
from duraguard._activities import MAX_ASK_KEYS
from duraguard._wire import DECIDE
from duraguard.approvals import (
    ApprovalCheck,
    Approver,
    generate_keypair,
    load_private_key,
    load_public_key,
    sign,
)
from duraguard.models import answer, calls
from duraguard.testing import AgentInput, AgentWorkflow, approver_decision

from ._harness import TOOL_LOG, Harness, make_harness, parked, steps
from .test_approvals import NEEDS, NeedsManager

pytestmark = pytest.mark.timeout(120)


def _people(n: int, role: str = "manager") -> tuple[list[Approver], dict[str, Any]]:
    private: dict[str, Any] = {}
    people = []
    for i in range(n):
        name = f"m{i:02d}"
        priv, pub = generate_keypair()
        private[name] = load_private_key(priv)
        people.append(Approver(name, load_public_key(pub), frozenset({role})))
    return people, private


def _asked(h: Harness) -> AgentInput:
    model = h.script(calls(("refund", {"order_id": "A2", "amount": 500})), answer("done"))
    return AgentInput(prompt="refund A2", model=model, tools=["refund"], guardrails=[NEEDS])


async def _decide(handle: Any, decision: Any) -> ApprovalCheck | str:
    """The update's answer, or the validator's refusal (nothing written to history)."""
    try:
        return await handle.execute_update(DECIDE, decision, result_type=ApprovalCheck)
    except WorkflowUpdateFailedError as err:
        return str(err.cause)


def _verified(history: Any) -> int:
    return sum(1 for name, _ in steps(history) if name == "duraguard.verify-decision")


@pytest.mark.parametrize("n", [65, 70])
async def test_the_yes_of_the_65th_person_holding_a_role_counts(temporal_env: Any, n: int) -> None:
    people, private = _people(n)
    h = await make_harness(
        temporal_env, guardrails=[NeedsManager()], approvers=ApproverKeys(people)
    )
    TOOL_LOG.clear()
    last = people[-1].name
    assert n > MAX_ASK_KEYS and sorted(p.name for p in people).index(last) >= MAX_ASK_KEYS
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, _asked(h), task_queue=tq)
        (ask,) = await parked(handle)
        assert ask.keys == {} and len(ask.prints) == n
        # Forged: someone else's key under the last person's name; and no key at all.
        other_priv, _ = generate_keypair()
        bare = approver_decision(ask, approver=last)
        forged = sign(bare, load_private_key(other_priv), with_public_key=True)
        refused = await _decide(handle, forged)
        assert isinstance(refused, str) and "with this key is not someone" in refused
        keyless = sign(bare, private[last])
        refused = await _decide(handle, keyless)
        assert isinstance(refused, str) and "send your public key" in refused
        swapped = forged.model_copy(
            update={"public_key": base64.b64encode(people[-1].public_key).decode()}
        )
        refused = await _decide(handle, swapped)
        assert isinstance(refused, str) and "does not verify" in refused
        good = approver_decision(ask, approver=last, private_key=private[last])
        checked = await _decide(handle, good)
        assert isinstance(checked, ApprovalCheck) and checked.ok, checked
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    history = await handle.fetch_history()
    assert _verified(history) == 1  # the forged ones never reached a step
    await h.replay(history)


def _write(path: Path, people: dict[str, tuple[bytes, list[str]]]) -> None:
    lines = []
    for name, (public, roles) in people.items():
        lines.append(f"{name}:\n  public_key: {base64.b64encode(public).decode()}\n")
        lines.append(f"  roles: [{', '.join(roles)}]\n")
    path.write_text("".join(lines))


@pytest.mark.parametrize("change", ["removed", "role-taken", "file-broken"])
async def test_a_change_to_the_approvers_file_holds_for_an_ask_already_parked(
    temporal_env: Any, tmp_path: Path, change: str
) -> None:
    """The run parks while alice and carol are managers. Then the file changes: alice removed,
    or her role taken away, or the file broken mid-edit. Her yes is refused by the worker's
    check (no restart); once the file reads with carol in it, carol's yes counts."""
    people, private = _people(2)
    alice, carol = ("m00", people[0]), ("m01", people[1])
    path = tmp_path / "approvers.yaml"
    everyone = {n: (p.public_key, ["manager"]) for n, p in (alice, carol)}
    _write(path, everyone)
    h = await make_harness(temporal_env, guardrails=[NeedsManager()], approvers=path)
    TOOL_LOG.clear()
    tq = f"tq-{uuid.uuid4().hex[:8]}"
    async with h.worker(tq):
        handle = await h.start(AgentWorkflow.run, _asked(h), task_queue=tq)
        (ask,) = await parked(handle)
        assert set(ask.keys) == {"m00", "m01"}  # both counted when the call parked
        if change == "removed":
            _write(path, {"m01": everyone["m01"]})
            why = "unknown approver 'm00'"
        elif change == "role-taken":
            _write(path, {**everyone, "m00": (alice[1].public_key, ["clerk"])})
            why = "does not have the role 'manager'"
        else:
            path.write_text(path.read_text() + "m02: {public_key: [unclosed\n")
            why = "is not valid YAML"
        checked = await _decide(
            handle, approver_decision(ask, approver="m00", private_key=private["m00"])
        )
        assert isinstance(checked, ApprovalCheck) and not checked.ok
        assert why in checked.reason, checked.reason
        if change == "file-broken":
            _write(path, {"m01": everyone["m01"]})  # fixed, alice removed after all
        checked = await _decide(
            handle, approver_decision(ask, approver="m01", private_key=private["m01"])
        )
        assert isinstance(checked, ApprovalCheck) and checked.ok, checked
        result = await handle.result()
    assert result.stop_reason == "done"
    assert TOOL_LOG == [("refund", {"order_id": "A2", "amount": 500})]
    await h.replay(await handle.fetch_history())


def test_an_approvers_file_is_read_again_when_it_changes_and_a_broken_one_counts_nobody(
    tmp_path: Path,
) -> None:
    people, _ = _people(3)
    path = tmp_path / "approvers.yaml"
    _write(path, {p.name: (p.public_key, ["manager"]) for p in people})
    keys = ApproverKeys.from_file(path)
    assert sorted(a.name for a in keys) == ["m00", "m01", "m02"] and keys.problem is None
    _write(path, {p.name: (p.public_key, ["manager"]) for p in people[1:]})
    assert keys.get("m00") is None and len(keys) == 2
    path.write_text("m01: {roles: manager}\n")
    assert keys.get("m01") is None and "has no public_key" in (keys.problem or "")
    path.unlink()
    assert len(keys) == 0 and "cannot be read" in (keys.problem or "")
    _write(path, {"m02": (people[2].public_key, [])})
    assert [a.name for a in keys] == ["m02"] and keys.problem is None
