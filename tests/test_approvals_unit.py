"""A person's signed decision, bound to one call: made, signed and checked without a server."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from duraguard.approvals import (
    Approver,
    ApproverKeys,
    Decision,
    generate_keypair,
    load_private_key,
    load_public_key,
    make_decision,
    sign,
    verify,
)
from duraguard.errors import ConfigurationError

NOW = 1_700_000_000.0
ARGS = {"order": "A-1", "amount": 250}


def _pair() -> tuple[Any, bytes, bytes]:
    private_pem, public_pem = generate_keypair()
    return load_private_key(private_pem), public_pem, load_public_key(public_pem)


ALICE_KEY, ALICE_PEM, ALICE_RAW = _pair()
BOB_KEY, BOB_PEM, BOB_RAW = _pair()
KEYS = ApproverKeys(
    [
        Approver("alice", ALICE_RAW, frozenset({"manager"})),
        Approver("bob", BOB_RAW, frozenset()),
    ]
)


def _decision(**overrides: Any) -> Decision:
    made: dict[str, Any] = {
        "workflow_id": "wf-1",
        "call_id": "call-1",
        "tool": "refund",
        "args": ARGS,
        "decision": "approve",
        "approver": "alice",
        "now": NOW,
        "private_key": ALICE_KEY,
    }
    made.update(overrides)
    return make_decision(**made)


def _verify(decision: Decision, **overrides: Any) -> Any:
    checked: dict[str, Any] = {
        "workflow_id": "wf-1",
        "call_id": "call-1",
        "tool": "refund",
        "args": ARGS,
        "keys": KEYS,
        "now": NOW + 60,
    }
    checked.update(overrides)
    return verify(decision, **checked)


def test_a_signed_decision_for_this_call_verifies() -> None:
    check = _verify(_decision(reason="fine by me"), role="manager")
    assert check.ok, check.reason
    assert check.approver == "alice"
    assert check.roles == ("manager",)
    assert check.call_id == "call-1"
    assert check.decision == "approve"


def test_a_signed_no_verifies_as_a_deny() -> None:
    check = _verify(_decision(decision="deny"))
    assert check.ok
    assert check.decision == "deny"


def test_signing_afterwards_is_the_same_as_signing_when_made() -> None:
    unsigned = _decision(private_key=None)
    assert unsigned.signature is None
    assert _verify(sign(unsigned, ALICE_KEY)).ok


def test_sign_takes_a_private_key_as_pem() -> None:
    private_pem, public_pem = generate_keypair()
    keys = ApproverKeys([Approver("alice", load_public_key(public_pem))])
    assert _verify(sign(_decision(private_key=None), private_pem), keys=keys).ok


def test_a_decision_with_edits_verifies_and_carries_them() -> None:
    decision = _decision(edits={"amount": 200})
    assert decision.edits_digest is not None
    assert _verify(decision).ok


def test_a_decision_with_empty_edits_verifies() -> None:
    assert _verify(_decision(edits={})).ok


@pytest.mark.parametrize(
    ("where", "value"),
    [("workflow_id", "wf-2"), ("call_id", "call-2")],
)
def test_a_decision_for_another_workflow_or_call_is_refused(where: str, value: str) -> None:
    check = _verify(_decision(), **{where: value})
    assert not check.ok
    assert "this decision is for wf-1/call-1" in check.reason


def test_a_decision_for_altered_arguments_is_refused() -> None:
    check = _verify(_decision(), args={**ARGS, "amount": 25_000})
    assert not check.ok
    assert "altered call" in check.reason


def test_a_decision_for_another_tool_with_the_same_arguments_is_refused() -> None:
    check = _verify(_decision(), tool="wire_transfer")
    assert not check.ok
    assert "altered call" in check.reason


def test_edits_changed_after_signing_are_refused() -> None:
    signed = _decision(edits={"amount": 200})
    tampered = signed.model_copy(update={"edits": {"amount": 20_000}})
    check = _verify(tampered)
    assert not check.ok
    assert "edits do not match the digest that was signed" in check.reason


def test_edits_dropped_after_signing_are_refused() -> None:
    signed = _decision(edits={"amount": 200})
    check = _verify(signed.model_copy(update={"edits": None}))
    assert not check.ok
    assert "names edits that did not arrive" in check.reason


def test_edits_added_with_a_matching_digest_but_no_new_signature_are_refused() -> None:
    from duraguard._types import digest

    signed = _decision()
    edits = {"amount": 20_000}
    forged = signed.model_copy(update={"edits": edits, "edits_digest": digest(edits)})
    check = _verify(forged)
    assert not check.ok
    assert "signature does not verify" in check.reason


def test_an_expired_decision_is_refused() -> None:
    check = _verify(_decision(ttl_seconds=30), now=NOW + 31)
    assert not check.ok
    assert "expired" in check.reason


def test_a_decision_at_its_expiry_instant_still_counts() -> None:
    assert _verify(_decision(ttl_seconds=30), now=NOW + 30).ok


def test_a_decision_with_a_used_nonce_is_refused() -> None:
    decision = _decision()
    check = _verify(decision, used_nonces=["other", decision.nonce])
    assert not check.ok
    assert "nonce was used before" in check.reason


def test_each_decision_gets_its_own_nonce() -> None:
    assert _decision().nonce != _decision().nonce


def test_an_unsigned_decision_is_refused_and_says_how_to_sign() -> None:
    check = _verify(_decision(private_key=None))
    assert not check.ok
    assert "unsigned decision" in check.reason
    assert "duraguard approve" in check.reason


def test_an_unsigned_decision_is_accepted_when_unsigned_ones_are_allowed() -> None:
    check = _verify(_decision(private_key=None), accept_unsigned=True)
    assert check.ok
    assert "unsigned" in check.reason
    assert check.roles == ("manager",)


def test_an_unsigned_decision_without_the_role_is_refused_even_when_allowed() -> None:
    check = _verify(
        _decision(private_key=None, approver="bob"), accept_unsigned=True, role="manager"
    )
    assert not check.ok
    assert "does not have the role 'manager'" in check.reason


def test_a_decision_from_an_unknown_approver_is_refused() -> None:
    mallory_key, _, _ = _pair()
    check = _verify(_decision(approver="mallory", private_key=mallory_key))
    assert not check.ok
    assert "unknown approver 'mallory'" in check.reason


def test_a_decision_with_no_keys_registered_is_refused() -> None:
    check = _verify(_decision(), keys=None)
    assert not check.ok
    assert "unknown approver 'alice'" in check.reason


def test_a_decision_signed_with_another_persons_key_is_refused() -> None:
    check = _verify(_decision(private_key=BOB_KEY))
    assert not check.ok
    assert "signature does not verify with alice's key" in check.reason


def test_a_decision_whose_statement_changed_after_signing_is_refused() -> None:
    signed = _decision(decision="deny")
    check = _verify(signed.model_copy(update={"decision": "approve"}))
    assert not check.ok
    assert "signature does not verify" in check.reason


def test_a_garbled_signature_is_refused() -> None:
    check = _verify(_decision().model_copy(update={"signature": "not base64!"}))
    assert not check.ok
    assert "signature does not verify" in check.reason


def test_a_decision_from_someone_without_the_role_is_refused_naming_their_roles() -> None:
    check = _verify(_decision(approver="bob", private_key=BOB_KEY), role="manager")
    assert not check.ok
    assert "bob does not have the role 'manager'" in check.reason
    assert "(has: none)" in check.reason


# -- approvers and their keys ------------------------------------------------------------------


def test_approver_keys_load_from_a_yaml_file_with_pem_and_base64_keys(tmp_path: Path) -> None:
    pem = ALICE_PEM.decode()
    indented = "\n".join("      " + line for line in pem.strip().splitlines())
    path = tmp_path / "approvers.yaml"
    path.write_text(
        "alice:\n"
        "  roles: [manager, finance]\n"
        "  public_key: |\n"
        f"{indented}\n"
        f"bob: {base64.b64encode(BOB_RAW).decode()}\n"
    )
    keys = ApproverKeys.from_file(path)
    assert len(keys) == 2
    alice, bob = keys.get("alice"), keys.get("bob")
    assert alice is not None and bob is not None
    assert alice.public_key == ALICE_RAW
    assert alice.roles == frozenset({"manager", "finance"})
    assert bob.public_key == BOB_RAW
    assert bob.roles == frozenset()
    assert keys.roles() == frozenset({"manager", "finance"})
    assert "alice" in keys and "carol" not in keys


def test_approver_keys_from_a_file_verify_a_signed_decision(tmp_path: Path) -> None:
    path = tmp_path / "approvers.yaml"
    path.write_text(f"alice: {{public_key: {base64.b64encode(ALICE_RAW).decode()}}}\n")
    assert _verify(_decision(), keys=ApproverKeys.from_file(path)).ok


def test_an_approver_listed_twice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="approver 'alice' is listed twice"):
        ApproverKeys([Approver("alice", ALICE_RAW), Approver("alice", BOB_RAW)])


def test_an_approver_listed_twice_in_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvers.yaml"
    path.write_text(
        f"alice: {base64.b64encode(ALICE_RAW).decode()}\n"
        f"alice: {base64.b64encode(BOB_RAW).decode()}\n"
    )
    with pytest.raises(ConfigurationError, match="'alice' is listed twice"):
        ApproverKeys.from_file(path)


def test_an_approver_key_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="32 bytes; got 16"):
        ApproverKeys([Approver("alice", b"\x01" * 16)])


def test_a_base64_key_of_the_wrong_length_in_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvers.yaml"
    path.write_text(f"alice: {base64.b64encode(b'x' * 16).decode()}\n")
    with pytest.raises(ConfigurationError, match="32 bytes; this one is 16"):
        ApproverKeys.from_file(path)


def test_a_32_character_base64_key_is_read_as_base64_not_as_raw_bytes() -> None:
    short = base64.b64encode(b"y" * 24).decode()  # 32 characters, 24 bytes
    assert len(short) == 32
    with pytest.raises(ConfigurationError, match="32 bytes; this one is 24"):
        load_public_key(short)


def test_a_key_that_is_not_base64_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="give PEM, base64 or 32 raw bytes"):
        load_public_key("this is not a key")


def test_raw_key_bytes_are_taken_as_they_are() -> None:
    assert load_public_key(ALICE_RAW) == ALICE_RAW


def test_a_missing_approvers_file_says_to_run_keygen(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        ApproverKeys.from_file(tmp_path / "nope.yaml")
    assert "does not exist" in str(info.value)
    assert "`duraguard keygen NAME`" in str(info.value)


def test_an_approvers_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "approvers.yaml"
    path.write_text("- alice\n- bob\n")
    with pytest.raises(ConfigurationError, match="must map names to keys"):
        ApproverKeys.from_file(path)
