"""``duraguard doctor`` through its entry point (``main([...])``, and once as ``python -m
duraguard``), against real servers: a dev server with and without the search attributes, a
real PostgreSQL; each failure says what to fix, and the exit code is 0 only when all is well."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

import duraguard
from duraguard.approvals import generate_keypair
from duraguard.cli import main
from duraguard.codec import new_key
from duraguard.postgres import SCHEMA_VERSION, PostgresConversations
from duraguard.testing import AgentWorkflow

from ._postgres import PostgresServer
from ._servers import free_port, start_dev_server

ENV = ("DURAGUARD_CONVERSATIONS", "DURAGUARD_CODEC_KEYS", "DURAGUARD_SESSION_KEY")
ENV += ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE")
ENV += ("TEMPORAL_API_KEY",)


def _address(env: Any) -> str:
    return str(env.client.service_client.config.target_host)


@pytest.fixture
def well(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """An environment where everything is set up: a store, codec keys, a session key."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("DURAGUARD_CONVERSATIONS", str(tmp_path / "conversations.db"))
    monkeypatch.setenv("DURAGUARD_CODEC_KEYS", f"k1:{new_key()}")
    monkeypatch.setenv("DURAGUARD_SESSION_KEY", "s" * 32)
    yield monkeypatch


@pytest.fixture
def approvers(tmp_path: Path) -> Path:
    _, public = generate_keypair()
    path = tmp_path / "approvers.yaml"
    body = "".join(f"    {line}\n" for line in public.decode().splitlines())
    path.write_text(f"alice:\n  public_key: |\n{body}  roles: [manager]\n")
    return path


def _doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["doctor", *argv, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is (code == 0)
    return code, {c["name"]: c for c in report["checks"]}


async def test_a_deployment_set_up_right_is_all_ok(
    temporal_env: Any, well: pytest.MonkeyPatch, approvers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = await asyncio.to_thread(
        _doctor, capsys, "--address", _address(temporal_env), "--approvers", str(approvers),
        "--search-attributes",
    )  # fmt: skip
    assert code == 0, checks
    assert {c["status"] for c in checks.values()} == {"ok"}
    assert "1 approver(s) (alice), roles manager" in checks["approvers"]["detail"]
    assert "encrypting under 'k1'" in checks["codec keys"]["detail"]
    assert "DuraguardPending" in checks["search attributes"]["detail"]


async def test_an_unreachable_server_fails_and_says_how_to_point_at_one(
    well: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{free_port()}"
    code, checks = await asyncio.to_thread(_doctor, capsys, "--address", address)
    assert code == 1
    assert checks["server"]["status"] == "fail" and address in checks["server"]["detail"]
    assert "TEMPORAL_ADDRESS" in checks["server"]["fix"]
    assert checks["search attributes"]["status"] == "skip"


async def test_the_connection_comes_from_an_environment_configuration_profile(
    temporal_env: Any, well: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "temporal.toml"
    toml.write_text(
        f'[profile.prod]\naddress = "{_address(temporal_env)}"\nnamespace = "default"\n'
    )
    well.setenv("TEMPORAL_CONFIG_FILE", str(toml))
    well.setenv("TEMPORAL_PROFILE", "prod")
    _, checks = await asyncio.to_thread(_doctor, capsys)
    assert checks["server"]["status"] == "ok", checks
    assert _address(temporal_env) in checks["server"]["detail"]


async def test_missing_search_attributes_fail_with_the_command_that_registers_them(
    well: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a server without them the fix is the operator command; run it, and doctor is happy."""
    env = await start_dev_server()
    try:
        address = _address(env)
        code, checks = await asyncio.to_thread(
            _doctor, capsys, "--address", address, "--search-attributes"
        )
        found = checks["search attributes"]
        assert code == 1 and found["status"] == "fail", found
        commands = [c.split(" (Temporal Cloud")[0] for c in found["fix"].split("; ")]
        assert len(commands) == 3 and all(
            "temporal operator search-attribute create" in c for c in commands
        )
        temporal = str(Path(sys.executable).parent / "temporal")
        for command in commands:
            argv = [temporal, *command.split()[1:], "--address", address]
            subprocess.run(argv, check=True, capture_output=True, timeout=60)
        _, checks = await asyncio.to_thread(
            _doctor, capsys, "--address", address, "--search-attributes"
        )
        assert checks["search attributes"]["status"] == "ok", checks["search attributes"]
    finally:
        await env.shutdown()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("alice: [not, a, mapping]", "alice"),
        ("alice:\n  public_key: not a key\n", "alice"),
        (": : :", ""),
    ],
)
async def test_an_approvers_file_that_does_not_load_fails(
    well: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    says: str,
) -> None:
    bad = tmp_path / "approvers.yaml"
    bad.write_text(content)
    code, checks = await asyncio.to_thread(
        _doctor, capsys, "--address", f"127.0.0.1:{free_port()}", "--approvers", str(bad)
    )
    assert code == 1 and checks["approvers"]["status"] == "fail"
    assert str(bad) in checks["approvers"]["detail"] and says in checks["approvers"]["detail"]
    missing = tmp_path / "nowhere.yaml"
    _, checks = await asyncio.to_thread(_doctor, capsys, "--approvers", str(missing))
    assert checks["approvers"]["status"] == "fail"


async def test_a_sqlite_store_that_cannot_be_used_fails(
    well: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_sqlite = tmp_path / "junk.db"
    not_sqlite.write_bytes(b"this is not a database" * 100)
    cases = (
        (not_sqlite, "not a database"),
        (tmp_path, "a folder"),
        (tmp_path / "a" / "b.db", "no such folder"),
    )
    for where, says in cases:
        well.setenv("DURAGUARD_CONVERSATIONS", str(where))
        code, checks = await asyncio.to_thread(
            _doctor, capsys, "--address", f"127.0.0.1:{free_port()}"
        )
        assert code == 1 and checks["conversations"]["status"] == "fail", checks["conversations"]
        assert says in checks["conversations"]["detail"] and checks["conversations"]["fix"]


async def test_a_postgresql_store_reports_its_schema_version_or_what_to_fix(
    well: pytest.MonkeyPatch, postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_{uuid.uuid4().hex[:10]}"
    well.setenv("DURAGUARD_CONVERSATIONS", postgres.dsn)
    nowhere = f"127.0.0.1:{free_port()}"
    _, checks = await asyncio.to_thread(_doctor, capsys, "--address", nowhere)
    assert checks["conversations"]["status"] == "ok", checks["conversations"]
    store = PostgresConversations(postgres.dsn, schema=schema)
    assert await store.migrate() == SCHEMA_VERSION
    await store.close()
    # The plugin's store, named through --plugin, with its own schema.
    module = Path(os.environ.get("TMPDIR", "/tmp")) / f"doctor_plugin_{schema}.py"
    module.write_text(
        "import duraguard\nfrom duraguard.postgres import PostgresConversations\n"
        f"plugin = duraguard.DuraguardPlugin(conversations=PostgresConversations({postgres.dsn!r}, "
        f"schema={schema!r}), search_attributes=True)\n"
    )
    well.syspath_prepend(str(module.parent))
    try:
        _, checks = await asyncio.to_thread(
            _doctor, capsys, "--address", nowhere, "--plugin", f"{module.stem}:plugin"
        )
        assert checks["conversations"]["detail"].endswith(
            f"schema {schema} at version {SCHEMA_VERSION}"
        )
        assert checks["search attributes"]["status"] == "skip"  # asked for, but no server
        conn = await asyncpg.connect(postgres.dsn)
        newer = f"INSERT INTO {schema}.schema_version VALUES ($1, $2)"
        await conn.execute(newer, SCHEMA_VERSION + 1, SCHEMA_VERSION + 1)
        await conn.close()
        _, checks = await asyncio.to_thread(
            _doctor, capsys, "--address", nowhere, "--plugin", f"{module.stem}:plugin"
        )
        assert (
            checks["conversations"]["status"] == "fail"
            and "upgrade duraguard" in checks["conversations"]["fix"]
        )
    finally:
        module.unlink()
    well.setenv(
        "DURAGUARD_CONVERSATIONS", f"postgresql://duraguard@127.0.0.1:{free_port()}/postgres"
    )
    code, checks = await asyncio.to_thread(_doctor, capsys, "--address", nowhere)
    assert code == 1 and checks["conversations"]["status"] == "fail"
    assert "start PostgreSQL" in checks["conversations"]["fix"]


async def test_bad_keys_fail_and_missing_ones_warn(
    temporal_env: Any, well: pytest.MonkeyPatch, approvers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--address", _address(temporal_env), "--approvers", str(approvers))
    well.setenv("DURAGUARD_CODEC_KEYS", "k1:not-base64!")
    well.setenv("DURAGUARD_SESSION_KEY", "short")
    code, checks = await asyncio.to_thread(_doctor, capsys, *args)
    assert code == 1
    assert checks["codec keys"]["status"] == "fail" and "base64" in checks["codec keys"]["detail"]
    assert (
        checks["session key"]["status"] == "fail" and "16 bytes" in checks["session key"]["detail"]
    )
    well.delenv("DURAGUARD_CODEC_KEYS")
    well.delenv("DURAGUARD_SESSION_KEY")
    code, checks = await asyncio.to_thread(_doctor, capsys, *args)
    assert code == 0  # not set up is a warning: it works, without what they give
    assert checks["codec keys"]["status"] == checks["session key"]["status"] == "warn"
    assert checks["session key"]["fix"] and checks["codec keys"]["fix"]
    code, _ = await asyncio.to_thread(_doctor, capsys, *args, "--strict")
    assert code == 1


async def test_a_task_queue_without_workers_fails_and_one_with_them_names_them(
    temporal_env: Any, well: pytest.MonkeyPatch, approvers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = f"doctor-{uuid.uuid4().hex[:8]}"
    args = (
        "--address",
        _address(temporal_env),
        "--approvers",
        str(approvers),
        "--task-queue",
        queue,
    )
    code, checks = await asyncio.to_thread(_doctor, capsys, *args)
    assert code == 1 and checks["workers"]["status"] == "fail"
    client = await Client.connect(_address(temporal_env), plugins=[duraguard.DuraguardPlugin()])
    async with Worker(client, task_queue=queue, workflows=[AgentWorkflow], identity="doc-w1"):
        for _ in range(100):  # the server lists a poller once its poll arrived
            code, checks = await asyncio.to_thread(_doctor, capsys, *args)
            if checks["workers"]["status"] == "ok":
                break
            await asyncio.sleep(0.1)
    assert code == 0 and "doc-w1" in checks["workers"]["detail"], checks["workers"]


async def test_a_task_queue_the_server_refuses_is_a_finding_not_a_traceback(
    temporal_env: Any, well: pytest.MonkeyPatch, approvers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name past the server's limit (1,000 characters): the server refuses the question, and
    that answer is the finding, with its fix; the other checks are still reported."""
    queue = "q" * 1_100
    args = ("--address", _address(temporal_env), "--approvers", str(approvers))
    code, checks = await asyncio.to_thread(_doctor, capsys, *args, "--task-queue", queue)
    assert code == 1
    workers = checks["workers"]
    assert workers["status"] == "fail" and "length exceeds limit" in workers["detail"], workers
    assert "--task-queue" in workers["fix"] and len(workers["detail"]) < 400
    assert checks["server"]["status"] == "ok"


def test_the_installed_command_prints_each_finding_with_its_fix(well: pytest.MonkeyPatch) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "duraguard", "doctor", "--address", f"127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert done.returncode == 1, done.stderr
    assert "fail  server" in done.stdout and "fix: start the server" in done.stdout
    assert "warn  approvers" in done.stdout


async def test_a_plugin_that_cannot_be_built_is_the_first_finding(
    well: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker's own plugin, built as the worker builds it: what it raises is reported."""
    (tmp_path / "doctor_broken_plugin.py").write_text(
        "import duraguard\n"
        "def make():\n"
        "    return duraguard.DuraguardPlugin(approvers='/nowhere/approvers.yaml')\n"
        "not_a_plugin = 3\n"
    )
    well.syspath_prepend(str(tmp_path))
    nowhere = ("--address", f"127.0.0.1:{free_port()}")
    for spec, says in (
        ("doctor_broken_plugin:make", "/nowhere/approvers.yaml"),
        ("doctor_broken_plugin:not_a_plugin", "not a DuraguardPlugin"),
        ("no_such_module_here:plugin", "No module named"),
    ):
        code, checks = await asyncio.to_thread(_doctor, capsys, *nowhere, "--plugin", spec)
        assert code == 1 and checks["plugin"]["status"] == "fail", checks
        assert says in checks["plugin"]["detail"] and checks["plugin"]["fix"]
