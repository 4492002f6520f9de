"""Per-worker settings made visible to workflow code, deterministically, through an interceptor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import temporalio.worker
from temporalio import workflow

ATTR = "__duraguard_config__"


@dataclass(frozen=True)
class WorkflowConfig:
    """What the plugin tells workflow code: the same on every worker built from one plugin."""

    check_mode: str = "auto"
    search_attributes: bool = False
    admission: bool = False
    """True where the worker gates tools by agent or principal: admission steps then always run."""


DEFAULT = WorkflowConfig()


def current() -> WorkflowConfig:
    """The plugin's settings for the running workflow (defaults without the plugin)."""
    inst = workflow.instance()
    return getattr(inst, ATTR, DEFAULT) if inst is not None else DEFAULT


class _Inbound(temporalio.worker.WorkflowInboundInterceptor):
    def __init__(
        self, next: temporalio.worker.WorkflowInboundInterceptor, config: WorkflowConfig
    ) -> None:
        super().__init__(next)
        self._config = config

    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        try:
            object.__setattr__(workflow.instance(), ATTR, self._config)
        except AttributeError:  # a workflow class with __slots__: defaults apply
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
