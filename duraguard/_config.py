"""Per-worker settings made visible to workflow code, deterministically, through an interceptor."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import temporalio.worker
from temporalio import workflow


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


DEFAULT = WorkflowConfig()

_CONFIGS: weakref.WeakKeyDictionary[Any, WorkflowConfig] = weakref.WeakKeyDictionary()


def current() -> WorkflowConfig:
    """The plugin's settings for the running workflow (defaults without the plugin)."""
    inst = workflow.instance()
    if inst is None:
        return DEFAULT
    try:
        return _CONFIGS.get(inst, DEFAULT)
    except TypeError:  # not weakly referenceable (__slots__ without __weakref__)
        return DEFAULT


class _Inbound(temporalio.worker.WorkflowInboundInterceptor):
    def __init__(
        self, next: temporalio.worker.WorkflowInboundInterceptor, config: WorkflowConfig
    ) -> None:
        super().__init__(next)
        self._config = config

    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        try:
            _CONFIGS[workflow.instance()] = self._config
        except TypeError:  # a workflow class with __slots__ and no __weakref__: defaults apply
            pass
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
