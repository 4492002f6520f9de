"""``duraguard doctor``: check a deployment and say what to fix.

It reads the deployment as a worker would: the Temporal connection from the environment
configuration profile (``temporal.toml``, ``TEMPORAL_*``; ``--address`` / ``--namespace`` win),
and duraguard's settings either from the worker's own plugin (``--plugin module:attribute``, an
object or a function returning one) or from the environment the worker runs with
(``DURAGUARD_CONVERSATIONS``, ``DURAGUARD_CODEC_KEYS``, ``DURAGUARD_SESSION_KEY``) and the flags
(``--approvers``, ``--search-attributes``). Each check is ``ok``, ``warn`` (not set up, and what
that means), ``fail`` (with the fix) or ``skip``. Exit 0 only when nothing failed (and, with
``--strict``, nothing warned); 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from .._wire import SEARCH_ATTRIBUTES
from ..codec import CodecError, codec_from_env
from ..conversations import ENV, default_store
from ..errors import ConfigurationError
from ..plugin import DuraguardPlugin
from ..postgres import is_postgres_url
from ._common import EXIT_FAILED, EXIT_OK, _emit_json, _run, connect_config, render_table, use_color
from ._doctor_settings import (
    Check,
    Deployment,
    Status,
    _approvers_check,
    _codec_check,
    _session_key_check,
    _store_check,
)


def add_doctor_parser(sub: Any, conn: argparse.ArgumentParser) -> None:
    """Register ``duraguard doctor`` and its flags."""
    p = sub.add_parser(
        "doctor",
        parents=[conn],
        help="check a deployment (server, search attributes, approvers, store, keys)",
        description=(__doc__ or "").split("\n\n")[1].replace("\n", " "),
    )
    p.add_argument(
        "--plugin",
        metavar="MODULE:NAME",
        help="the worker's DuraguardPlugin (or a function making it)",
    )
    p.add_argument("--approvers", metavar="FILE", help="the approvers file the workers load")
    p.add_argument(
        "--search-attributes",
        action="store_true",
        help="the workers run with search_attributes=True (implied by --plugin when it does)",
    )
    p.add_argument("--task-queue", metavar="QUEUE", help="also check that workers poll this queue")
    p.add_argument("--strict", action="store_true", help="a warning fails too")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    deployment = _deployment(args)
    checks = [
        *(_run(_temporal_checks(args, deployment))),
        _approvers_check(deployment),
        *_run(_store_check(deployment)),
        *_codec_check(deployment),
        _session_key_check(deployment),
    ]
    if deployment.plugin_error:
        checks.insert(0, Check("plugin", "fail", deployment.plugin_error, _PLUGIN_FIX))
    failed = any(c.status == "fail" for c in checks) or (
        args.strict and any(c.status == "warn" for c in checks)
    )
    if args.json:
        _emit_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        _print(checks)
    return EXIT_FAILED if failed else EXIT_OK


def _print(checks: list[Check]) -> None:
    rows = []
    for c in checks:
        rows.append([c.status, c.name, c.detail])
        if c.fix:
            rows.append(["", "", f"fix: {c.fix}"])
    print(render_table(["", "check", "what was found"], rows, color=use_color(sys.stdout)))


_PLUGIN_FIX = "name the object as module:attribute, importable from here (PYTHONPATH)"


# -- what is deployed ----------------------------------------------------------------------


def _deployment(args: argparse.Namespace) -> Deployment:
    d = Deployment(approvers=args.approvers, search_attributes=args.search_attributes)
    if args.plugin:
        plugin = _load_plugin(args.plugin, d)
        if plugin is not None:
            d.search_attributes = d.search_attributes or plugin.config.search_attributes
            d.store = plugin.runtime.conversations
            d.codec = plugin._codec
            d.session_key = plugin.runtime.session_key is not None
            keys = plugin.runtime.approvers
            d.approver_count = None if keys is None else len(keys)
        return d
    chosen = os.environ.get(ENV, "")
    if not is_postgres_url(chosen):  # looked at, not opened (opening creates the file)
        d.sqlite = Path(chosen) if chosen else Path.home() / ".duraguard" / "conversations.db"
    else:
        try:
            d.store = default_store()
        except (ConfigurationError, ImportError) as err:
            d.store_error = str(err)
    try:
        d.codec = codec_from_env()
    except CodecError as err:
        d.codec = err
    d.session_key = bool(os.environ.get("DURAGUARD_SESSION_KEY"))
    return d


def _load_plugin(spec: str, d: Deployment) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in (attr or "plugin").split("."):
            found = getattr(found, part)
        plugin = found() if callable(found) and not isinstance(found, DuraguardPlugin) else found
    except Exception as err:  # whatever building the worker's plugin raises is the finding
        d.plugin_error = f"cannot load {spec}: {type(err).__name__}: {err}"
        return None
    if not isinstance(plugin, DuraguardPlugin):
        d.plugin_error = f"{spec} is a {type(plugin).__name__}, not a DuraguardPlugin"
        return None
    return plugin


# -- Temporal --------------------------------------------------------------------------------

RPC_TIMEOUT = timedelta(seconds=10)
"""How long doctor waits on each answer of the server (retried as the SDK retries its own
calls: a busy server is asked again, a server that never answers is reported, not waited on)."""


async def _temporal_checks(args: argparse.Namespace, d: Deployment) -> list[Check]:
    from temporalio.client import Client

    try:
        config = connect_config(args)
    except Exception as err:
        return [Check("server", "fail", str(err), "fix temporal.toml or the TEMPORAL_* variables")]
    where = f"{config['target_host']}, namespace {config['namespace']}"
    try:
        client = await Client.connect(**config)
        await client.service_client.check_health(retry=True, timeout=RPC_TIMEOUT)
        info = await _namespace(client)
    except Exception as err:
        return [
            Check(
                "server",
                "fail",
                f"cannot reach Temporal at {where}: {_first_line(err)}",
                "start the server, or point at it: TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE, a "
                "temporal.toml profile (TEMPORAL_PROFILE), --address; Temporal Cloud needs "
                "TEMPORAL_API_KEY or TEMPORAL_TLS_CLIENT_CERT_PATH / _KEY_PATH",
            ),
            Check("search attributes", "skip", "the server was not reached"),
        ]
    out = [Check("server", "ok", f"{where}{info}")]
    out.append(await _search_attributes(client, config["namespace"], d.search_attributes))
    if args.task_queue:
        out.append(await _pollers(client, config["namespace"], args.task_queue))
    return out


async def _namespace(client: Any) -> str:
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    got = await client.workflow_service.get_system_info(
        GetSystemInfoRequest(), retry=True, timeout=RPC_TIMEOUT
    )
    return f" (server {got.server_version})" if got.server_version else ""


async def _search_attributes(client: Any, namespace: str, wanted: bool) -> Check:
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    if not wanted:
        return Check("search attributes", "skip", "the workers run without search_attributes=True")
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace), retry=True, timeout=RPC_TIMEOUT
        )
    except Exception as err:
        return Check(
            "search attributes",
            "fail",
            f"cannot list them: {_first_line(err)}",
            "the client needs the operator API (self-hosted) or list them in Temporal Cloud's UI",
        )
    have = {**dict(listed.custom_attributes), **dict(listed.system_attributes)}
    missing = []
    for name, kind in SEARCH_ATTRIBUTES.items():
        found = have.get(name)
        if found is None or IndexedValueType.Name(found) != f"INDEXED_VALUE_TYPE_{kind.upper()}":
            missing.append((name, kind))
    if not missing:
        return Check(
            "search attributes", "ok", ", ".join(sorted(SEARCH_ATTRIBUTES)) + " registered"
        )
    commands = "; ".join(
        f"temporal operator search-attribute create --namespace {namespace} --name {n} --type {k}"
        for n, k in missing
    )
    return Check(
        "search attributes",
        "fail",
        f"not registered (or of another type): {', '.join(n for n, _ in missing)}",
        f"{commands} (Temporal Cloud: tcld namespace search-attributes add, or the UI)",
    )


async def _pollers(client: Any, namespace: str, queue: str) -> Check:
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    try:
        got = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            ),
            retry=True,
            timeout=RPC_TIMEOUT,
        )
    except Exception as err:  # the server's answer is the finding (a name it refuses, a fault)
        return Check(
            "workers",
            "fail",
            f"cannot ask who polls {queue[:80]!r}{'...' if len(queue) > 80 else ''}: "
            f"{_first_line(err)}",
            "give the task queue the workers are started with (--task-queue NAME)",
        )
    names = sorted({p.identity for p in got.pollers})
    if not names:
        return Check(
            "workers", "fail", f"no worker polls {queue!r}", "start a worker on that task queue"
        )
    return Check("workers", "ok", f"{len(names)} poll {queue!r}: {', '.join(names)}")


def _first_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return text.splitlines()[0][:300]


__all__: list[str] = ["Check", "Deployment", "Status", "add_doctor_parser", "cmd_doctor"]
