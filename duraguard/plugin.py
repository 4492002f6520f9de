"""``DuraguardPlugin``: added once to ``Client.connect(plugins=[...])``, it wires every worker.

It registers duraguard's activities (the guardrail pass, the decision check, the model turn,
one activity per tool), composes the pydantic data converter with the user's, passes duraguard
and its heavy dependencies through the workflow sandbox, installs duraguard's interceptors and
registers its failure types.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import temporalio.converter
from temporalio.client import ClientConfig
from temporalio.contrib.pydantic import (
    PydanticJSONPlainPayloadConverter,
    PydanticPayloadConverter,
)
from temporalio.plugin import SimplePlugin
from temporalio.worker import ReplayerConfig, Worker, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from ._activities import Runtime
from ._config import WorkflowConfig
from ._config_interceptor import ConfigInterceptor
from ._interceptors import PrincipalInterceptor
from ._marks import mark_run
from ._mcp_sessions import while_worker_runs
from ._mistakes import check_workflow_modules
from ._payload_walk import ensure as ensure_payload_walk
from ._startup import check_search_attributes
from ._tool_step import tools_by_name
from .approvals import ApproverKeys
from .budget import BUDGET_ACTIVITIES, BUDGET_WORKFLOWS
from .checks.policy import PolicyRegistry
from .conversations import ContextPolicy, ConversationStore, default_store
from .errors import FAILURE_TYPES, ConfigurationError
from .guardrail import Guardrail, Resources
from .tools import Tool

PASSTHROUGH = ("duraguard", "pydantic", "pydantic_core", "jsonschema", "cryptography", "yaml")

CheckMode = Literal["auto", "local", "activity", "inline"]


def _carries_pydantic(converter: temporalio.converter.DataConverter) -> bool:
    """Whether ``converter`` writes JSON with pydantic, so duraguard's models survive the trip.

    Pydantic's own converter qualifies, and so does any composite converter whose ``json/plain``
    encoding is pydantic's: the OpenAI agents plugin's ``OpenAIPayloadConverter`` and Pydantic
    AI's ``PydanticAIPayloadConverter`` are both built that way.
    """
    # A fresh instance: the converter's own is wrapped by the SDK (transfer types), so
    # isinstance on it says nothing of the class underneath.
    pc = converter.payload_converter_class()
    if not isinstance(pc, temporalio.converter.CompositePayloadConverter):
        return False
    return isinstance(pc.converters.get(b"json/plain"), PydanticJSONPlainPayloadConverter)


def _later_plugin_installs_pydantic(later: Sequence[object]) -> bool:
    """Whether the plugins configured after duraguard, given the default converter, end with one
    that carries pydantic models.

    The OpenAI agents plugin accepts only the default converter, which it replaces with its own
    (it means to accept its own too, but its ``isinstance`` check fails on the wrapper temporalio
    1.35 puts around every payload converter), so a duraguard plugin listed before it must leave
    the default to it. Each plugin's converter
    parameter is a function of the converter it is given (``SimplePlugin``'s contract); running
    it on the default tells what it would install without touching the client.
    """
    converter = temporalio.converter.DataConverter.default
    for plugin in later:
        param = plugin.data_converter if isinstance(plugin, SimplePlugin) else None
        if param is None:
            continue
        try:
            converter = param(converter) if callable(param) else param
        except Exception:
            return False  # it refuses the default too: nothing duraguard does can help it
    if converter.payload_converter_class is temporalio.converter.DefaultPayloadConverter:
        return False
    return _carries_pydantic(converter)


def _compose_converter(
    existing: temporalio.converter.DataConverter | None,
    codec: temporalio.converter.PayloadCodec | None,
    *,
    later_installs_pydantic: bool = False,
) -> temporalio.converter.DataConverter:
    base = existing or temporalio.converter.DataConverter.default
    pc = base.payload_converter_class
    if pc is temporalio.converter.DefaultPayloadConverter:
        if not later_installs_pydantic:
            base = dataclasses.replace(base, payload_converter_class=PydanticPayloadConverter)
    elif not _carries_pydantic(base):
        raise ConfigurationError(
            f"the client's data converter uses {pc.__name__}, which does not write JSON with "
            "pydantic and so cannot carry duraguard's pydantic models; subclass "
            "temporalio.contrib.pydantic.PydanticPayloadConverter for your converter (or give "
            "your composite converter a PydanticJSONPlainPayloadConverter for json/plain), or "
            "leave the default and duraguard will use pydantic's"
        )
    if codec is not None:
        if base.payload_codec is not None and base.payload_codec is not codec:
            raise ConfigurationError(
                "the client already has a payload codec; pass codec= to one of them only"
            )
        base = dataclasses.replace(base, payload_codec=codec)
    return base


def _sandbox(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        raise ConfigurationError("no workflow runner to configure for duraguard")
    if isinstance(runner, SandboxedWorkflowRunner):
        return dataclasses.replace(
            runner, restrictions=runner.restrictions.with_passthrough_modules(*PASSTHROUGH)
        )
    return runner


def _session_key(given: bytes | str | None) -> tuple[str, bytes] | None:
    raw = given if given is not None else os.environ.get("DURAGUARD_SESSION_KEY")
    if raw is None:
        return None
    key = raw.encode() if isinstance(raw, str) else raw
    if len(key) < 16:
        raise ConfigurationError(
            f"a session key must be at least 16 bytes; got {len(key)}. Make one with "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`"
        )
    return hashlib.sha256(key).hexdigest()[:8], key


def _custom(guardrails: Iterable[Guardrail]) -> dict[str, Guardrail]:
    custom: dict[str, Guardrail] = {}
    for g in guardrails:
        if not isinstance(g, Guardrail):
            raise ConfigurationError(
                f"DuraguardPlugin(guardrails=[...]) takes Guardrail objects; got "
                f"{type(g).__name__}. Wrap a function with @duraguard.guardrail."
            )
        if g.name in custom:
            raise ConfigurationError(f"two custom guardrails are named {g.name!r}")
        custom[g.name] = g
    return custom


def _store(
    conversations: ConversationStore | Literal["default"] | None,
    codec: temporalio.converter.PayloadCodec | None,
) -> ConversationStore | None:
    store = default_store() if conversations == "default" else conversations
    if store is not None and not isinstance(store, ConversationStore):
        raise ConfigurationError(
            f"conversations= takes a ConversationStore, 'default' or None; got "
            f"{type(store).__name__}"
        )
    if store is not None and codec is not None:
        # At rest as in history: the conversation is encoded with the plugin's codec.
        store.bind(
            dataclasses.replace(temporalio.converter.DataConverter.default, payload_codec=codec)
        )
    return store


def _undo_map(tools: Iterable[Tool]) -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
    """For workflow code: which tool undoes which, and how the values map (``Tool(undo=...)``)."""
    return tuple(
        (t.name, t.undo.tool, tuple(sorted(t.undo.mapping.items())))
        for t in tools
        if t.undo is not None
    )


class DuraguardPlugin(SimplePlugin):
    """Guardrails for agents on Temporal. Add it once, on the client.

    Args:
        tools: The tools agents may call (declared with :func:`duraguard.tool`); each becomes
            an activity named after it.
        models: Model providers by name (``{"openai": OpenAIChat(...)}``); workflow code names
            one as ``"openai:gpt-4.1"``.
        classifiers: Moderation classifiers by name, for :func:`duraguard.moderation`.
        guardrails: Custom :class:`Guardrail` objects; workflow code names them by passing the
            same object (only its name crosses).
        approvers: Who may say yes: an :class:`ApproverKeys`, or a path to an approvers file.
        accept_unsigned: Accept unsigned decisions (local development only).
        check_mode: ``auto`` judges a lone call whose guardrails all run in the worker inside
            its own tool step (no step of its own; see ``docs/architecture.md``), and runs every
            other pass as a local activity unless one of its guardrails calls out; ``local`` and
            ``activity`` give every pass a step of its own, one or the other; ``inline`` is
            ``auto`` in runs that started before it was the default (they keep their passes).
        search_attributes: Upsert duraguard's search attributes (they must be registered in the
            namespace; ``duraguard server`` does it).
        codec: A payload codec (e.g. :class:`duraguard.codec.AesGcmCodec`) for every payload.
        admission: An :class:`duraguard.checks.admission.AdmissionRegistry` attaching admission
            guardrails to tools you do not own (by name pattern or predicate).
        rules: The policy's rule sheet (a path read live at check time, YAML text or a mapping).
        tool_kinds: The tool kinds file (``{tool: read|write|send}``); it always wins.
        catalogue: A catalogue file or mapping merged over the tools given in code.
        withdrawn: Tools withdrawn from use (names or a file), read live.
        session_key: The secret that seals a session carried across continue-as-new
            (:func:`duraguard.carry_over`); default: the ``DURAGUARD_SESSION_KEY`` variable.
            Every worker of a task queue needs the same one.
        max_subject_bytes: The largest value one check judges (canonical JSON bytes); a larger
            one is refused in workflow code before any step is scheduled.
        conversations: Where agent conversations live, outside event history
            (:class:`duraguard.conversations.ConversationStore`; every worker of a task queue
            needs the same one). ``"default"``: PostgreSQL where ``DURAGUARD_CONVERSATIONS`` is
            a ``postgresql://`` URL, else the SQLite file it names (default
            ``~/.duraguard/conversations.db``); ``None``: each model step carries the whole
            conversation (history then grows with the square of the session).
        context: What of a conversation the model reads each turn (default: the task and the
            last 200 messages, with a note of what was left out).
        extra: Further worker-side resources for custom guardrails, by name.
    """

    def __init__(
        self,
        *,
        tools: Sequence[Tool] = (),
        models: Mapping[str, Any] | None = None,
        classifiers: Mapping[str, Any] | None = None,
        guardrails: Iterable[Guardrail] = (),
        approvers: ApproverKeys | str | Path | None = None,
        accept_unsigned: bool = False,
        check_mode: CheckMode = "auto",
        search_attributes: bool = False,
        codec: temporalio.converter.PayloadCodec | None = None,
        admission: Any = None,
        rules: Any = None,
        tool_kinds: Any = None,
        catalogue: Any = None,
        withdrawn: Any = None,
        session_key: bytes | str | None = None,
        max_subject_bytes: int = 1_048_576,
        conversations: ConversationStore | Literal["default"] | None = "default",
        context: ContextPolicy | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        if check_mode not in ("auto", "local", "activity", "inline"):
            raise ConfigurationError(
                f"unknown check_mode {check_mode!r}; known: auto, local, activity, inline"
            )
        if max_subject_bytes < 1024:
            raise ConfigurationError(
                f"max_subject_bytes must be at least 1024; got {max_subject_bytes}"
            )
        if isinstance(approvers, str | Path):
            approvers = ApproverKeys.from_file(approvers)
        tool_map = tools_by_name(tools)
        store = _store(conversations, codec)
        extras = dict(extra or {})
        if approvers is not None:
            extras.setdefault("approvers", approvers)
        if "policy" not in extras:
            extras["policy"] = PolicyRegistry(
                rules=rules,
                tool_kinds=tool_kinds,
                catalogue=catalogue,
                withdrawn=withdrawn,
                tools=tool_map,
            )
        self.resources = Resources(
            classifiers=classifiers,
            tools=tool_map,
            guardrails=_custom(guardrails),
            extra=extras,
        )
        self.runtime = Runtime(
            resources=self.resources,
            tools=tool_map,
            models=models or {},
            approvers=approvers,
            accept_unsigned=accept_unsigned,
            admission=admission,
            session_key=_session_key(session_key),
            conversations=store,
            context=context,
        )
        self.config = WorkflowConfig(
            check_mode=check_mode,
            search_attributes=search_attributes,
            admission=admission is not None or any(t.agents is not None for t in tool_map.values()),
            max_subject_bytes=max_subject_bytes,
            conversations=store is not None,
            can_seal=self.runtime.session_key is not None,
            undo=_undo_map(tool_map.values()),
        )
        self._codec = codec
        super().__init__(
            "duraguard.DuraguardPlugin",
            activities=[*self.runtime.activities(), *BUDGET_ACTIVITIES],
            workflows=list(BUDGET_WORKFLOWS),
            workflow_runner=_sandbox,
            interceptors=[PrincipalInterceptor(), ConfigInterceptor(self.config)],
            workflow_failure_exception_types=list(FAILURE_TYPES),
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add duraguard's activities, workflows and settings; refuse a workflow whose script
        would run itself again in the sandbox (:func:`duraguard._mistakes.check_workflow_modules`)."""
        config = super().configure_worker(config)
        check_workflow_modules(config.get("workflows") or ())
        ensure_payload_walk()
        # Built here, once a process, not inside the first workflow task that reads a long
        # non-ASCII page (a quarter of a second: the deadlock detector allows two).
        mark_run()
        return config

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        """Compose the client's converter with duraguard's (see :func:`_compose_converter`).

        A plugin listed after this one that installs its own pydantic-capable converter over the
        default (the OpenAI agents plugin) gets the default to replace; duraguard then rides on
        its converter.
        """
        config = super().configure_client(config)
        plugins = list(config.get("plugins", ()))
        later = plugins[plugins.index(self) + 1 :] if self in plugins else []
        config["data_converter"] = _compose_converter(
            config.get("data_converter"),
            self._codec,
            later_installs_pydantic=_later_plugin_installs_pydantic(later),
        )
        return config

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        """Compose the replayer's converter with duraguard's.

        A replayer does not tell its plugins who comes next, so duraguard cannot leave the
        default converter to a plugin after it: on a ``Replayer``, list the OpenAI agents plugin
        before duraguard (it refuses any converter but the default, its own included).
        """
        config = super().configure_replayer(config)
        config["data_converter"] = _compose_converter(config.get("data_converter"), self._codec)
        ensure_payload_walk()
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Refuse to start a worker whose settings would leave every run stuck (see
        :mod:`duraguard._startup`), then run it; once the last worker of this event loop stops,
        close the MCP sessions its tools kept open."""
        if self.config.search_attributes:
            try:
                await check_search_attributes(worker.client)
            except BaseException:
                # Nothing was started: say so, as the SDK does when its own validation fails
                # (or `async with worker` would wait for a shutdown that never comes).
                started = getattr(worker, "_shutdown_complete_event", None)
                if started is not None:
                    started.set()
                raise
        async with while_worker_runs():
            await super().run_worker(worker, next)

    @property
    def policy(self) -> Any:
        """The live policy registry (withdraw a tool, or swap the rule sheet, without a deploy)."""
        return self.resources.extra["policy"]

    @property
    def checks_run(self) -> int:
        """Guardrail passes evaluated by workers built with this plugin (for tests and audits)."""
        return self.runtime.checks_run
