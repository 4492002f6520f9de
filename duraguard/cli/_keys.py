"""``duraguard keygen`` / ``codec-keygen``: an approver's key pair, a codec key."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ..approvals import generate_keypair, load_public_key
from ..codec import ENV_VAR, CodecError, new_key
from ._common import (
    EXIT_OK,
    CliError,
    _emit_json,
)

# --------------------------------------------------------------------------------------------
# keygen
# --------------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def approvers_entry(name: str, public_key_b64: str, roles: Sequence[str]) -> str:
    """The approvers-file entry (YAML) for one person."""
    return f"{name}:\n  public_key: {public_key_b64}\n  roles: [{', '.join(roles)}]\n"


def cmd_keygen(args: argparse.Namespace) -> int:
    """A new Ed25519 key pair for an approver, and their approvers-file entry."""
    import base64

    name = args.name
    if not _NAME.match(name):
        raise CliError(
            f"name {name!r} must start with a letter or digit and hold only letters, digits, "
            "'.', '_' or '-' (it names the files and the approver)"
        )
    roles = [r.strip() for r in (args.roles or "").split(",") if r.strip()]
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    private_path, public_path = directory / f"{name}.pem", directory / f"{name}.pub.pem"
    for p in (private_path, public_path):
        if p.exists() and not args.force:
            raise CliError(f"{p} already exists; pick another name, or pass --force to replace it")
    private_pem, public_pem = generate_keypair()
    _write(private_path, private_pem, 0o600)
    _write(public_path, public_pem, 0o644)
    b64 = base64.b64encode(load_public_key(public_pem)).decode()
    entry = approvers_entry(name, b64, roles)
    if args.json:
        _emit_json(
            {
                "name": name,
                "private_key": str(private_path),
                "public_key_file": str(public_path),
                "public_key": b64,
                "roles": roles,
                "entry": entry,
            }
        )
        return EXIT_OK
    print(f"wrote {private_path} (private, keep it to yourself) and {public_path}")
    print("add this entry to the workers' approvers file:\n")
    print(entry, end="")
    return EXIT_OK


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a file created with ``mode`` (never briefly more open than that)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


# --------------------------------------------------------------------------------------------
# codec
# --------------------------------------------------------------------------------------------


def cmd_codec_keygen(args: argparse.Namespace) -> int:
    """A new AES key, as a ``DURAGUARD_CODEC_KEYS`` entry."""
    if not re.match(r"^[A-Za-z0-9._-]{1,64}$", args.key_id):
        raise CliError(f"key id {args.key_id!r} must be 1-64 letters, digits, '.', '_' or '-'")
    try:
        entry = f"{args.key_id}:{new_key(args.bits)}"
    except CodecError as e:
        raise CliError(str(e)) from None
    if args.json:
        _emit_json({"key_id": args.key_id, "entry": entry, "env": ENV_VAR})
        return EXIT_OK
    print(entry)
    print(
        f"# put it first in ${ENV_VAR} (comma-separated, older keys after it)",
        file=sys.stderr,
    )
    return EXIT_OK
