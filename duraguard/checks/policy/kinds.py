"""Stage one, tool kinds: whether the tool reads, writes or sends, and who said so."""

from __future__ import annotations

from .call import Call
from .catalogue import kind_of


def classify(call: Call) -> None:
    """Set ``call.kind`` and ``call.kind_source``.

    With the check switched off its inputs (the tool kinds file, the tool's own mark and
    inference) are withheld, so every tool counts as a write and the tool check asks.
    """
    if not call.settings.on("tool_kinds"):
        call.kind, call.kind_source = "write", "withheld"
        return
    call.kind, call.kind_source = kind_of(
        call.info, call.tool, call.snap.kinds, infer=call.settings.infer
    )
