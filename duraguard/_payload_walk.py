"""The SDK's payload walk, without its per-payload look-ups when they can change nothing.

Before a workflow activation runs and after it completes, the SDK walks every payload of the
activation and of its completion three times (codec, external storage, storage references;
``temporalio.bridge.worker``), and for each payload list it asks the workflow which
serialization context the list belongs to. Under the sandbox every one of those questions is an
``exec`` inside it (``workflow_sandbox._runner._Instance.get_serialization_context``): measured
on this machine, about 30 a call of ``agent_loop`` and the better part of a millisecond and a
half of the worker's CPU, spent to pick a codec that does not exist.

A converter with neither a payload codec nor external storage gives the same payloads back,
whatever the context: the base class's methods, which the command-aware converter calls with
the context's converter, return the list as it came (the decode ones still refuse a payload
that claims to be stored outside). So with neither configured, the command-aware converter's
six methods here call the base class's method on itself, without asking; and a completion is
not walked at all (its three walks would each put back the very payloads they took). An
activation is still walked, for the refusal. With a codec (the encryption codec, a compression
codec) or external storage everything goes the SDK's way, as the context may then matter.

Installed once per process by :class:`~duraguard.plugin.DuraguardPlugin` for its workers; left
uninstalled, with nothing changed, when the SDK's classes do not have the shape this was written
against (:func:`install` says which).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import temporalio.bridge.worker
import temporalio.converter

log = logging.getLogger(__name__)

METHODS = (
    "_encode_payload_sequence",
    "_external_store_payload_sequence",
    "_encode_reference_payload_sequence",
    "_decode_reference_payload_sequence",
    "_external_retrieve_payload_sequence",
    "_decode_payload_sequence",
)
"""The command-aware converter's methods that ask for the context of each payload list."""

_MARK = "__duraguard_payload_walk__"

Walk = Callable[[Any, Sequence[Any]], Awaitable[list[Any]]]


def _without_look_up(name: str, theirs: Walk) -> Walk:
    base: Walk = getattr(temporalio.converter.DataConverter, name)

    @functools.wraps(theirs)
    async def walk(self: Any, payloads: Sequence[Any]) -> list[Any]:
        if _plain(self):
            return await base(self, payloads)
        return await theirs(self, payloads)

    setattr(walk, _MARK, theirs)
    return walk


def _plain(dc: Any) -> bool:
    return dc.payload_codec is None and dc.external_storage is None


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
    else why not: the SDK in use has no command-aware converter, or not these methods, or no
    ``payload_codec`` / ``external_storage`` on its data converter."""
    cls = _command_aware()
    if cls is None:
        return "this temporalio has no command-aware data converter"
    fields = getattr(temporalio.converter.DataConverter, "__dataclass_fields__", {})
    if not {"payload_codec", "external_storage"} <= fields.keys():
        return "this temporalio's DataConverter has no payload_codec or no external_storage"
    missing = [
        m
        for m in METHODS
        if m not in cls.__dict__ or not hasattr(temporalio.converter.DataConverter, m)
    ]
    if missing:
        return f"this temporalio's command-aware data converter lacks {', '.join(missing)}"
    for name in METHODS:
        theirs = cls.__dict__[name]
        if not hasattr(theirs, _MARK):
            setattr(cls, name, _without_look_up(name, theirs))
    encode = getattr(temporalio.bridge.worker, "encode_completion", None)
    metrics = _metrics()
    if encode is not None and metrics is not None and not hasattr(encode, _MARK):
        temporalio.bridge.worker.encode_completion = _completion_unwalked(encode, metrics)
    return None


def ensure() -> None:
    """:func:`install`, saying once at debug level why the short cut is not there (the SDK then
    walks as it always does: slower, the same payloads)."""
    global _told
    why = install()
    if why is not None and not _told:
        _told = True
        log.debug("duraguard: the SDK's payload walk keeps its context look-ups: %s", why)


_told = False


def installed() -> bool:
    """Whether the short cut is in place in this process."""
    cls = _command_aware()
    return (
        cls is not None
        and all(hasattr(cls.__dict__.get(m), _MARK) for m in METHODS)
        and hasattr(temporalio.bridge.worker.encode_completion, _MARK)
    )


def uninstall() -> None:
    """Put the SDK's methods back (for tests and benchmarks that measure both)."""
    cls = _command_aware()
    if cls is None:
        return
    for name in METHODS:
        ours = cls.__dict__.get(name)
        theirs = getattr(ours, _MARK, None)
        if theirs is not None:
            setattr(cls, name, theirs)
    encode = getattr(temporalio.bridge.worker.encode_completion, _MARK, None)
    if encode is not None:
        temporalio.bridge.worker.encode_completion = encode
