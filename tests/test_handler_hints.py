"""The handlers a run registers carry their annotations as types: the SDK reads them every time a
handler is set, and a string annotation is compiled afresh each time."""

from __future__ import annotations

import typing

import pytest
from temporalio.common import _type_hints_from_func

from duraguard._gate import AskDesk
from duraguard._plan import PlanDesk
from duraguard._preview import PreviewDesk
from duraguard._tiny import role_words
from duraguard.approvals import ApprovalCheck

HANDLERS = [
    AskDesk._on_signal, AskDesk._on_update, AskDesk._validate, AskDesk.pending,
    AskDesk.verdicts, PreviewDesk.on_preview, PreviewDesk.validate, PlanDesk.on_plan,
    PlanDesk.validate,
]  # fmt: skip


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda h: h.__qualname__)
def test_a_handler_is_annotated_with_types_not_strings(handler: typing.Any) -> None:
    strings = {k: v for k, v in handler.__annotations__.items() if isinstance(v, str)}
    assert strings == {}
    assert handler.__annotations__ == typing.get_type_hints(handler)


def test_the_sdk_reads_the_same_types_from_resolved_hints() -> None:
    _args, returned = _type_hints_from_func(AskDesk._on_update)
    assert returned is ApprovalCheck


def test_role_words_are_kept_per_name_and_cannot_be_changed() -> None:
    first = role_words("hotelNames_id")
    assert first == frozenset({"hotel", "name", "id"})
    assert role_words("hotelNames_id") is first
    assert isinstance(first, frozenset)
