"""The principal: the person the work runs for, named when a workflow starts.

Name it on the client side, and everything under that workflow carries it in a Temporal header
(``duraguard-principal``): its activities, child workflows, continue-as-new runs, signals::

    with duraguard.principal("ana"):
        await client.start_workflow(SupportAgent.run, ticket, id=..., task_queue=...)

Read it anywhere under that workflow with :func:`current_principal`. In workflow code it comes
from the run's own start header, so replay reads the same value; in an activity it comes from
the activity's header. The interceptor that carries it (:class:`PrincipalInterceptor`) is
installed by the plugin.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import temporalio.api.common.v1
import temporalio.converter
import temporalio.workflow

from ._wire import PRINCIPAL_HEADER
from .errors import ConfigurationError

_current: ContextVar[str | None] = ContextVar("duraguard_principal", default=None)
_converter = temporalio.converter.PayloadConverter.default

Headers = Mapping[str, temporalio.api.common.v1.Payload]


@contextmanager
def principal(name: str | None) -> Iterator[str | None]:
    """Run the block on behalf of ``name``: workflows started in it carry the principal.

    Client-side and activity code only. ``principal(None)`` clears it for the block.

    Raises:
        ConfigurationError: called inside workflow code (a run's principal is fixed when it is
            started), or ``name`` is empty or not a string.
    """
    if temporalio.workflow.in_workflow():
        raise ConfigurationError(
            "duraguard.principal(...) cannot be used inside workflow code: a run's principal is "
            "fixed when it starts and carried to everything under it; name it where the "
            "workflow is started, and read it with duraguard.current_principal()"
        )
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigurationError(f"a principal is a non-empty string; got {name!r}")
    token = _current.set(name)
    try:
        yield name
    finally:
        _current.reset(token)


def current_principal() -> str | None:
    """The principal the current work runs for, or ``None`` when none was named.

    In workflow code: the principal in the run's start header (deterministic, replay-safe).
    In an activity: the one in the activity's header. Elsewhere: the innermost
    ``with principal(...)`` block.
    """
    if temporalio.workflow.in_workflow():
        return from_headers(temporalio.workflow.info().headers)
    return _current.get()


def to_payload(name: str) -> temporalio.api.common.v1.Payload:
    """The header payload carrying ``name``."""
    return _converter.to_payloads([name])[0]


def from_headers(headers: Headers | None) -> str | None:
    """The principal in a header map, or ``None``; a malformed one is ``None`` (never guessed)."""
    if not headers:
        return None
    payload = headers.get(PRINCIPAL_HEADER)
    if payload is None:
        return None
    try:
        value = _converter.from_payloads([payload])[0]
    except Exception:
        return None
    return value if isinstance(value, str) and value else None


def with_principal(headers: Headers, name: str | None) -> Headers:
    """``headers`` plus the principal header, unless it is already there or ``name`` is None."""
    if name is None or PRINCIPAL_HEADER in headers:
        return headers
    return {**headers, PRINCIPAL_HEADER: to_payload(name)}


def _bind(name: str | None) -> object:
    """Set the principal for the current context (the activity interceptor's use); a token."""
    return _current.set(name)


def _unbind(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


__all__ = ["current_principal", "principal"]
