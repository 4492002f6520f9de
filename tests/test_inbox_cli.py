"""``duraguard inbox`` on the command line: tokens and their access-file entries, usage
mistakes refused with the fix, and the server itself started as a person starts it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
import yaml

from duraguard.cli import main
from duraguard.inbox import Access

pytestmark = pytest.mark.timeout(60)


def test_new_token_prints_a_token_and_an_entry_that_signs_its_holder_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inbox", "--new-token", "rita", "--rights", "see", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    access = Access.from_mapping(yaml.safe_load(out["entry"]))
    who = access.bearer(out["token"])
    assert who is not None and (who.name, who.right) == ("rita", "see")
    assert out["token"] not in out["entry"]  # only its digest is kept
    assert access.bearer(out["token"] + "x") is None


def test_an_open_inbox_beyond_loopback_is_refused_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inbox", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--host 0.0.0.0 would let other machines decide" in err and "--access FILE" in err


def test_a_missing_or_malformed_access_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inbox", "--access", str(tmp_path / "none.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "access.yaml"
    bad.write_text("people:\n  alice: {token_sha256: nothex, rights: decide}\n")
    assert main(["inbox", "--access", str(bad)]) == 2
    assert "person 'alice': token_sha256 must be 64 lowercase hex digits" in capsys.readouterr().err
    bad.write_text("people:\n  alice: {token_sha256: " + "0" * 64 + ", rights: admin}\n")
    assert main(["inbox", "--access", str(bad)]) == 2
    assert "rights 'admin' is not one of see, read, decide" in capsys.readouterr().err
    assert main(["inbox", "--tls-cert", "c.pem"]) == 2
    assert "--tls-cert and --tls-key go together" in capsys.readouterr().err


async def test_the_inbox_command_serves_until_interrupted(temporal_env: Any) -> None:
    address = temporal_env.client.service_client.config.target_host
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "duraguard", "inbox", "--port", "0", "--address", address,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("duraguard inbox at http://127.0.0.1:"), line
        url = line.split()[3]
        async with httpx.AsyncClient(base_url=url) as c:
            me = (await c.get("/api/me")).json()
            assert me["auth"] == "open" and me["right"] == "decide" and me["csrf"]
            listing = (await c.get("/api/asks")).json()
            assert isinstance(listing["asks"], list)
        proc.send_signal(signal.SIGINT)
        rest = (await asyncio.wait_for(proc.stdout.read(), 20)).decode()
        assert await proc.wait() == 0, rest
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
