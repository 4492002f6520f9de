"""One fault case's state on disk, shared by the single-worker suite and the fleet suite (the
fixture is registered in tests/faults/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from activities.store import open_db
from duraguard.approvals import generate_keypair


@dataclass
class Files:
    """One case's state on disk: the desk, the payments, markers, the approver's keys."""

    folder: Path
    desk: Path
    payments: Path
    markers: Path
    approvers: Path
    key: Path


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return make_files(tmp_path)


def make_files(tmp_path: Path) -> Files:
    """A desk, a payments file, a markers folder and an approver (alice) in ``tmp_path``."""
    private, public = generate_keypair()
    key = tmp_path / "alice.pem"
    key.write_bytes(private)
    key.chmod(0o600)
    approvers = tmp_path / "approvers.yaml"
    approvers.write_text(
        "alice:\n  public_key: |\n"
        + "".join(f"    {line}\n" for line in public.decode().splitlines())
        + "  roles: [manager]\n"
    )
    markers = tmp_path / "markers"
    markers.mkdir()
    return Files(
        folder=tmp_path,
        desk=open_db(tmp_path / "desk.db"),
        payments=tmp_path / "payments.db",
        markers=markers,
        approvers=approvers,
        key=key,
    )
