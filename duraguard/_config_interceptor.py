"""The interceptor that hands each workflow run the plugin's settings (:mod:`duraguard._config`).

Kept apart from the principal's interceptors (:mod:`duraguard._interceptors`): this one wraps a
run from below, theirs are called by the run's code on its way out, and one module on both ends
of a stack would be entered twice by every call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import temporalio.worker
import temporalio.workflow

from ._config import WorkflowConfig, bind


class _ConfigInbound(temporalio.worker.WorkflowInboundInterceptor):
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
            bind(found, self._config)
        super().init(outbound)

    async def execute_workflow(self, input: temporalio.worker.ExecuteWorkflowInput) -> Any:
        bind(asyncio.get_running_loop(), self._config)
        return await super().execute_workflow(input)


class ConfigInterceptor(temporalio.worker.Interceptor):
    """Hands the plugin's :class:`WorkflowConfig` to each workflow run."""

    def __init__(self, config: WorkflowConfig) -> None:
        self.config = config

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        config = self.config

        class Inbound(_ConfigInbound):
            def __init__(self, next: temporalio.worker.WorkflowInboundInterceptor) -> None:
                super().__init__(next, config)

        return Inbound


__all__ = ["ConfigInterceptor"]
