"""The cheap hint that a text may hold a date says what the case-blind pattern says, faster."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from duraguard._dates import _DATE_HINT, _date_hint, dates_in

SAMPLES = [
    "Refund policy: see KB-4411 at https://kb.example.com/a/4411?ref=search",
    "Due 2024-05-01", "on 5/6/2024", "Meet in MARCH", "sept 3", "Sept. 3rd", "JuN", "decimal",
    "maybe", "primary", "no date here", "12-34", "1/", "/2", "",
    "\u017fep 5",  # a long s, which the case-blind pattern takes for an s
    "\u0662\u0660\u0662\u0664-\u0660\u0665",  # 2024-05 in Arabic-Indic digits
    "\u212aelvin",  # a Kelvin sign
    "Ma\u0308rz",  # a combining mark
]  # fmt: skip


def test_the_hint_agrees_with_the_pattern_on_known_texts() -> None:
    for text in SAMPLES:
        assert _date_hint(text) == (_DATE_HINT.search(text) is not None), text


@settings(max_examples=600, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from("janfebmrpyulgsoctvdJANFEBMRPYULGSOCTVD0123456789-/ .ſ٢é"),
        max_size=24,
    )
)
def test_the_hint_agrees_with_the_pattern_on_any_text(text: str) -> None:
    assert _date_hint(text) == (_DATE_HINT.search(text) is not None)


def test_dates_are_still_read_past_the_hint() -> None:
    assert dates_in("shipped 2024-05-01, back May 13 to 17") == {
        "2024-05-01", "--05-13", "--05-17",
    }  # fmt: skip
    assert dates_in("shipped on the first") == set()
