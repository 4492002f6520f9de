"""What a worker checks before it polls: settings that would leave every run stuck, refused at
start with the fix named.

``DuraguardPlugin(search_attributes=True)`` on a namespace where duraguard's search attributes are
not registered made every run that parked or refused a call fail its workflow task on the upsert,
for ever, with WARN lines only. The worker now asks the namespace first and will not start.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ._wire import SEARCH_ATTRIBUTES
from .errors import ConfigurationError

log = logging.getLogger("duraguard")

_TYPES = {
    "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT,
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
}


_ASK_TIMEOUT = timedelta(seconds=10)
# Answers that say nothing of the attributes: the namespace cannot be asked (no right, an old
# server) or did not answer in time. Anything else (NOT_FOUND namespace, ...) is raised.
_CANNOT_ASK = (
    RPCStatusCode.PERMISSION_DENIED,
    RPCStatusCode.UNIMPLEMENTED,
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
)


async def check_search_attributes(client: Client) -> None:
    """Refuse to start where duraguard's search attributes are missing (or of another type)
    in the client's namespace; go on, with a warning, where the namespace cannot be asked.

    The question is retried as the SDK retries its own calls (a busy or restarting server
    answers UNAVAILABLE or runs past its deadline for a while); a server still not answering
    after that is warned about, not fatal: the worker's own polls wait for it as they always do.
    """
    namespace = client.namespace
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace),
            retry=True,
            timeout=_ASK_TIMEOUT,
        )
    except RPCError as err:
        if err.status in _CANNOT_ASK:
            log.warning(
                "duraguard: cannot list the search attributes of namespace %r (%s); make sure "
                "%s are registered, or runs that park or refuse a call will not go on",
                namespace, err.status.name, ", ".join(sorted(SEARCH_ATTRIBUTES)),
            )  # fmt: skip
            return
        raise
    have = dict(listed.custom_attributes)
    wrong = [
        (name, kind)
        for name, kind in sorted(SEARCH_ATTRIBUTES.items())
        if have.get(name) != _TYPES[kind]
    ]
    if not wrong:
        return
    missing = ", ".join(f"{name} ({kind})" for name, kind in wrong)
    create = " ".join(f"--name {name} --type {kind}" for name, kind in wrong)
    raise ConfigurationError(
        f"DuraguardPlugin(search_attributes=True), but namespace {namespace!r} has not "
        f"registered {missing}: every run that parked or refused a call would fail its workflow "
        "task on the upsert, for ever. Register them (`temporal operator search-attribute "
        f"create --namespace {namespace} {create}`; `duraguard server` does it for a dev "
        "server), or leave search_attributes=False"
    )
