"""Carry the principal in Temporal headers: client → workflow → activities, children, next runs.

One class is both a client and a worker interceptor (the SDK's pattern): put it on the client
and every worker built from that client uses it too. The plugin installs it.
"""

from __future__ import annotations

from typing import Any, NoReturn

import temporalio.client
import temporalio.worker
import temporalio.workflow

from ._wire import PRINCIPAL_HEADER
from .principal import _bind, _current, _unbind, from_headers, with_principal


class PrincipalInterceptor(temporalio.client.Interceptor, temporalio.worker.Interceptor):
    """Puts the principal on what a client starts and carries it through the workflow."""

    def intercept_client(
        self, next: temporalio.client.OutboundInterceptor
    ) -> temporalio.client.OutboundInterceptor:
        return _ClientOutbound(next)

    def intercept_activity(
        self, next: temporalio.worker.ActivityInboundInterceptor
    ) -> temporalio.worker.ActivityInboundInterceptor:
        return _ActivityInbound(next)

    def workflow_interceptor_class(
        self, input: temporalio.worker.WorkflowInterceptorClassInput
    ) -> type[temporalio.worker.WorkflowInboundInterceptor]:
        return _WorkflowInbound


class _ClientOutbound(temporalio.client.OutboundInterceptor):
    """Client side: the principal of the enclosing ``with principal(...)`` block, if any."""

    async def start_workflow(
        self, input: temporalio.client.StartWorkflowInput
    ) -> temporalio.client.WorkflowHandle[Any, Any]:
        input.headers = with_principal(input.headers, _current.get())
        return await super().start_workflow(input)

    async def signal_workflow(self, input: temporalio.client.SignalWorkflowInput) -> None:
        input.headers = with_principal(input.headers, _current.get())
        await super().signal_workflow(input)

    async def query_workflow(self, input: temporalio.client.QueryWorkflowInput) -> Any:
        input.headers = with_principal(input.headers, _current.get())
        return await super().query_workflow(input)

    async def start_workflow_update(
        self, input: temporalio.client.StartWorkflowUpdateInput
    ) -> temporalio.client.WorkflowUpdateHandle[Any]:
        input.headers = with_principal(input.headers, _current.get())
        return await super().start_workflow_update(input)

    async def start_update_with_start_workflow(
        self, input: temporalio.client.StartWorkflowUpdateWithStartInput
    ) -> temporalio.client.WorkflowUpdateHandle[Any]:
        name = _current.get()
        start = input.start_workflow_input
        start.headers = with_principal(start.headers, name)
        update = input.update_workflow_input
        update.headers = with_principal(update.headers, name)
        return await super().start_update_with_start_workflow(input)


class _ActivityInbound(temporalio.worker.ActivityInboundInterceptor):
    """Worker side: an activity runs for the principal in its header (and only that one)."""

    async def execute_activity(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        token = _bind(from_headers(input.headers))
        try:
            return await super().execute_activity(input)
        finally:
            _unbind(token)


class _WorkflowInbound(temporalio.worker.WorkflowInboundInterceptor):
    def init(self, outbound: temporalio.worker.WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound))


def _run_header() -> Any:
    """The raw principal payload this run was started with, or None."""
    return temporalio.workflow.info().headers.get(PRINCIPAL_HEADER)


def _carry(headers: Any) -> Any:
    payload = _run_header()
    if payload is None or PRINCIPAL_HEADER in headers:
        return headers
    return {**headers, PRINCIPAL_HEADER: payload}


class _WorkflowOutbound(temporalio.worker.WorkflowOutboundInterceptor):
    """Workflow side: everything the run starts carries the run's own principal header."""

    def start_activity(
        self, input: temporalio.worker.StartActivityInput
    ) -> temporalio.workflow.ActivityHandle[Any]:
        input.headers = _carry(input.headers)
        return super().start_activity(input)

    def start_local_activity(
        self, input: temporalio.worker.StartLocalActivityInput
    ) -> temporalio.workflow.ActivityHandle[Any]:
        input.headers = _carry(input.headers)
        return super().start_local_activity(input)

    async def start_child_workflow(
        self, input: temporalio.worker.StartChildWorkflowInput
    ) -> temporalio.workflow.ChildWorkflowHandle[Any, Any]:
        input.headers = _carry(input.headers)
        return await super().start_child_workflow(input)

    def continue_as_new(self, input: temporalio.worker.ContinueAsNewInput) -> NoReturn:
        input.headers = _carry(input.headers)
        super().continue_as_new(input)

    async def signal_child_workflow(
        self, input: temporalio.worker.SignalChildWorkflowInput
    ) -> None:
        input.headers = _carry(input.headers)
        await super().signal_child_workflow(input)

    async def signal_external_workflow(
        self, input: temporalio.worker.SignalExternalWorkflowInput
    ) -> None:
        input.headers = _carry(input.headers)
        await super().signal_external_workflow(input)

    async def start_nexus_operation(
        self, input: temporalio.worker.StartNexusOperationInput[Any, Any]
    ) -> temporalio.workflow.NexusOperationHandle[Any]:
        name = from_headers(temporalio.workflow.info().headers)
        if name is not None and PRINCIPAL_HEADER not in (input.headers or {}):
            input.headers = {**(input.headers or {}), PRINCIPAL_HEADER: name}
        return await super().start_nexus_operation(input)


__all__ = ["PrincipalInterceptor"]
