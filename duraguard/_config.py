"""Per-worker settings made visible to workflow code, deterministically, through an interceptor."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Any

import temporalio.worker
import temporalio.workflow


@dataclass(frozen=True)
class WorkflowConfig:
    """What the plugin tells workflow code: the same on every worker built from one plugin."""

    check_mode: str = "auto"
    search_attributes: bool = False
    admission: bool = False
    """True where the worker gates tools by agent or principal: admission steps then always run."""
    max_subject_bytes: int = 1_048_576
    """The largest value one check may judge (canonical JSON); a larger one is refused in
    workflow code before any step is scheduled (a step's input is at most 2 MiB)."""
    conversations: bool = False
    """True where the workers keep agent conversations in a ConversationStore: ``agent_loop``
    then sends each model step only what is new."""
    can_seal: bool = False
    """True where the workers hold a session key, so a loop may continue-as-new."""
    undo: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = ()
    """(tool, the tool that undoes it, how the undo's arguments map onto the step's args or
    result), from the tools given to the plugin: how a call finds the step it reverses."""


DEFAULT = WorkflowConfig()

_CONFIGS: weakref.WeakKeyDictionary[Any, WorkflowConfig] = weakref.WeakKeyDictionary()
"""Per run, keyed by the run's own event loop (the SDK runs each workflow run on a loop of its
own): nothing is hung on the user's workflow object, and an entry goes with its run."""


def current() -> WorkflowConfig:
    """The plugin's settings for the running workflow (defaults without the plugin)."""
    return _CONFIGS.get(asyncio.get_running_loop(), DEFAULT)


def installed() -> bool:
    """Whether the plugin's interceptor handed this run its settings (a worker built with it)."""
    return asyncio.get_running_loop() in _CONFIGS


class _Inbound(temporalio.worker.WorkflowInboundInterceptor):
    def __init__(
        self, next: temporalio.worker.WorkflowInboundInterceptor, config: WorkflowConfig
    ) -> None:
        super().__init__(next)
        self._config = config

    def init(self, outbound: temporalio.worker.WorkflowOutboundInterceptor) -> None:
        # Before the workflow's own __init__ runs (a session made there reads the settings):
        # the run's loop is the runtime the SDK has just set (it is the instance itself).
        runtime = getattr(temporalio.workflow, "_Runtime", None)
        found = runtime.maybe_current() if runtime is not None else None
        if found is not None:
            _CONFIGS[found] = self._config
        super().init(outbound)

    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        _CONFIGS[asyncio.get_running_loop()] = self._config
        return await super().execute_workflow(input)


class ConfigInterceptor(temporalio.worker.Interceptor):
    """Hands the plugin's :class:`WorkflowConfig` to each workflow run."""

    def __init__(self, config: WorkflowConfig) -> None:
        self.config = config

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        config = self.config

        class Inbound(_Inbound):
            def __init__(self, next: temporalio.worker.WorkflowInboundInterceptor) -> None:
                super().__init__(next, config)

        return Inbound
