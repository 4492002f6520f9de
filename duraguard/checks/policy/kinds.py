"""Stage one, tool kinds: whether the tool reads, writes or sends, and who said so."""

from __future__ import annotations

from .call import Call
from .catalogue import KindReading, kind_of


def classify(call: Call) -> None:
    """Set ``call.kind``, ``call.kind_source`` and ``call.kind_reading`` (how sure, and why).

    With the check switched off its inputs (the tool kinds file, the tool's own mark and
    inference) are withheld, so every tool counts as a write and the tool check asks.
    """
    if not call.settings.on("tool_kinds"):
        reading = KindReading("write", "withheld", 0.0, "tool kinds are switched off")
    else:
        reading = kind_of(call.info, call.tool, call.snap.kinds, infer_kinds=call.settings.infer)
    call.kind, call.kind_source, call.kind_reading = reading.kind, reading.source, reading
