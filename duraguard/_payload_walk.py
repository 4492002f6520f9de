"""The SDK's payload walk, without its per-payload look-ups when they can change nothing.

Before a workflow activation runs and after it completes, the SDK walks every payload of the
activation and of its completion three times (codec, external storage, storage references;
``temporalio.bridge.worker``), and for each payload list it asks the workflow which
serialization context the list belongs to. Under the sandbox every one of those questions is an
``exec`` inside it (``workflow_sandbox._runner._Instance.get_serialization_context``): about 30
a call of ``agent_loop``, spent to pick a codec's context that nothing reads. Measured side by
side (``benchmarks/at_scale.py``), skipping them takes 5.2 ms of worker CPU off a guarded call.

What the context can change in a walk is the codec's work (a codec that takes a context:
:class:`temporalio.converter.WithSerializationContext`) and external storage's (whose store
context names where a payload goes). With neither of those (no codec, or one that takes no
context, as duraguard's :class:`~duraguard.codec.AesGcmCodec`; no external storage) the
command-aware converter is not made (its making builds a payload converter and a failure
converter afresh, twice an activation, besides the look-ups): the worker's own converter, the
same codec in it, walks the activation and the completion (the refusal of a payload that claims
to be stored outside kept) and turns a failed activation into a failure (the same classes,
without a context, as the command-aware one's). With no codec at all a completion is not walked
(its three walks would each put back the very payloads they took). With a codec that takes a
context, or external storage, everything goes the SDK's way.

Installed once per process by :class:`~duraguard.plugin.DuraguardPlugin` for its workers and
replayers; left uninstalled, with nothing changed, when the SDK's classes do not have the shape
this was written against (:func:`install` says which).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import temporalio.bridge.worker
import temporalio.converter

log = logging.getLogger(__name__)

_MARK = "__duraguard_payload_walk__"


def _plain(dc: Any) -> bool:
    """Neither a codec nor external storage: every walk gives the payloads back as they came."""
    return dc.payload_codec is None and dc.external_storage is None


def _context_free(dc: Any) -> bool:
    """No external storage (whose store context names where a payload goes), and no codec or
    one that takes no context: a walk with this converter does the same in any context."""
    codec = dc.payload_codec
    return dc.external_storage is None and (
        codec is None or not isinstance(codec, temporalio.converter.WithSerializationContext)
    )


def _made_only_when_needed(theirs: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(theirs)
    def create(
        instance: Any, context_free_dc: Any, workflow_context_dc: Any, workflow_context: Any
    ) -> Any:
        if (
            _context_free(context_free_dc)
            and _context_free(workflow_context_dc)
            and context_free_dc.payload_codec is workflow_context_dc.payload_codec
        ):
            return context_free_dc
        return theirs(
            instance=instance,
            context_free_dc=context_free_dc,
            workflow_context_dc=workflow_context_dc,
            workflow_context=workflow_context,
        )

    setattr(create, _MARK, theirs)
    return create


def _completion_unwalked(theirs: Callable[..., Awaitable[Any]], metrics: type) -> Any:
    @functools.wraps(theirs)
    async def encode_completion(completion: Any, data_converter: Any, *args: Any, **kw: Any) -> Any:
        if _plain(data_converter):
            return metrics()  # nothing stored outside: no metrics to report
        return await theirs(completion, data_converter, *args, **kw)

    setattr(encode_completion, _MARK, theirs)
    return encode_completion


def _metrics() -> type | None:
    try:
        from temporalio.converter._extstore import StorageOperationMetrics
    except ImportError:
        return None
    return StorageOperationMetrics


def _command_aware() -> type | None:
    try:
        from temporalio.worker._workflow import _CommandAwareDataConverter
    except ImportError:
        return None
    return _CommandAwareDataConverter


def install() -> str | None:
    """Install the short cut (once; later calls change nothing). ``None`` when installed,
    else why not: the SDK in use has no command-aware converter made by ``create``, no
    ``encode_completion``, or no ``payload_codec`` / ``external_storage`` on its converter."""
    cls = _command_aware()
    if cls is None or not isinstance(cls.__dict__.get("create"), staticmethod):
        return "this temporalio has no command-aware data converter made by create()"
    fields = getattr(temporalio.converter.DataConverter, "__dataclass_fields__", {})
    if not {"payload_codec", "external_storage"} <= fields.keys():
        return "this temporalio's DataConverter has no payload_codec or no external_storage"
    encode = getattr(temporalio.bridge.worker, "encode_completion", None)
    metrics = _metrics()
    if encode is None or metrics is None:
        return "this temporalio has no encode_completion or no StorageOperationMetrics"
    theirs = cls.__dict__["create"].__func__
    if not hasattr(theirs, _MARK):
        setattr(cls, "create", staticmethod(_made_only_when_needed(theirs)))  # noqa: B010
    if not hasattr(encode, _MARK):
        temporalio.bridge.worker.encode_completion = _completion_unwalked(encode, metrics)
    return None


_told = False
"""Whether :func:`ensure` has said why the short cut is not there."""


def ensure() -> None:
    """:func:`install`, saying once at debug level why the short cut is not there (the SDK then
    walks as it always does: slower, the same payloads)."""
    global _told
    why = install()
    if why is not None and not _told:
        _told = True
        log.debug("duraguard: the SDK's payload walk keeps its context look-ups: %s", why)


def installed() -> bool:
    """Whether the short cut is in place in this process."""
    cls = _command_aware()
    create = cls.__dict__.get("create") if cls is not None else None
    return (
        isinstance(create, staticmethod)
        and hasattr(create.__func__, _MARK)
        and hasattr(temporalio.bridge.worker.encode_completion, _MARK)
    )


def uninstall() -> None:
    """Put the SDK's own back (for tests and benchmarks that measure both)."""
    cls = _command_aware()
    create = cls.__dict__.get("create") if cls is not None else None
    if isinstance(create, staticmethod) and hasattr(create.__func__, _MARK):
        setattr(cls, "create", staticmethod(getattr(create.__func__, _MARK)))  # noqa: B010
    encode = getattr(temporalio.bridge.worker.encode_completion, _MARK, None)
    if encode is not None:
        temporalio.bridge.worker.encode_completion = encode
