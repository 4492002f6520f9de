"""Compact models leave every default-valued field out as they are written, and read back whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import Field
from pydantic_core import to_json

from duraguard._compact import _Compact
from duraguard._session_view import LedgerEntry, SessionView
from duraguard._types import (
    Context,
    Detection,
    PassResult,
    Subject,
    ToolDescription,
    Verdict,
)

REQUIRED: dict[type[_Compact], dict[str, Any]] = {
    Detection: {"rule": "pii.email"},
    Verdict: {},
    Context: {},
    ToolDescription: {"name": "lookup"},
    Subject: {"placement": "tool-args"},
    PassResult: {"verdict": Verdict()},
    SessionView: {},
}


def test_every_compact_model_of_the_vocabulary_is_covered() -> None:
    def below(c: type) -> set[type]:
        return {s for d in c.__subclasses__() for s in {d, *below(d)}}

    ours = {c for c in below(_Compact) if c.__module__.startswith("duraguard.")}
    assert ours == set(REQUIRED)


@pytest.mark.parametrize("cls", list(REQUIRED), ids=lambda c: c.__name__)
def test_a_model_with_only_its_required_fields_records_only_them(cls: type[_Compact]) -> None:
    model = cls(**REQUIRED[cls])
    written = json.loads(to_json(model))
    assert set(written) == set(REQUIRED[cls])
    assert model.model_dump(mode="json", by_alias=True).keys() == written.keys()
    assert cls.model_validate_json(to_json(model)) == model


def test_a_field_under_an_alias_or_with_a_model_for_default_is_left_out_too() -> None:
    # Subject's schema (written under its alias) and its context (a Context() by default)
    # were written as "schema":null and "context":{} into every check step.
    bare = Subject(placement="tool-args", value={"order_id": "A9"}, tool="lookup")
    assert json.loads(to_json(bare)) == {
        "placement": "tool-args",
        "value": {"order_id": "A9"},
        "tool": "lookup",
    }
    full = bare.model_copy(
        update={"input_schema": {"type": "object"}, "context": Context(agent="bench")}
    )
    written = json.loads(to_json(full))
    assert written["schema"] == {"type": "object"} and written["context"] == {"agent": "bench"}
    assert Subject.model_validate_json(to_json(full)) == full


def test_a_value_that_only_looks_like_the_default_is_kept() -> None:
    # Equal to the default is left out; falsy but different is not (a mask to 0, an empty
    # reason, a view at call 0 whose entry did not run).
    kept = Verdict(action="mask", payload=0, reason="")
    assert json.loads(to_json(kept)) == {"action": "mask", "payload": 0, "reason": ""}
    view = SessionView(turn_index=0, calls=0, chain_break=0)
    assert json.loads(to_json(view)) == {"turn_index": 0, "chain_break": 0}
    assert SessionView.model_validate_json(to_json(view)) == view


def test_a_ledger_entry_is_written_whole() -> None:
    # A session carried across continue-as-new is sealed with a MAC over its dump, entries
    # included, and opened by a worker that dumps it again: an entry written without its
    # defaults by one version would not verify under another.
    entry = LedgerEntry(index=0, call_id="c1", tool="lookup")
    assert set(json.loads(to_json(entry))) == set(LedgerEntry.model_fields)


def test_a_field_s_own_exclude_if_stands() -> None:
    class Own(_Compact):
        n: int = Field(default=1, exclude_if=lambda v: v < 0)

    assert json.loads(to_json(Own(n=1))) == {"n": 1}
    assert json.loads(to_json(Own(n=-3))) == {}


def test_a_compact_model_whose_annotations_resolve_later_is_refused_where_it_is_made() -> None:
    with pytest.raises(TypeError, match="every annotation of a compact model must resolve"):

        class Later(_Compact):
            nested: NotYetDefined | None = None  # type: ignore[name-defined]  # noqa: F821
