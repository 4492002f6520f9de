"""normalise(): the text content checks read (NFKC, invisible characters gone, ASCII digits and
dashes) and the way back to the original's offsets."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from duraguard.checks._text import invisible, normalise, replace_spans


def test_ascii_text_is_returned_as_it_is_without_a_map() -> None:
    n = normalise("card 4111 1111 1111 1111")
    assert n.text == n.original and n.starts is None
    assert n.span(5, 24) == (5, 24)


def test_every_format_character_is_removed() -> None:
    # Every code point of Unicode category Cf in this Python's database, not a hand-made list.
    cf = [chr(cp) for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) == "Cf"]
    assert len(cf) > 150
    for ch in cf:
        assert invisible(ch), f"U+{ord(ch):04X} is a format character"
        assert normalise(f"a{ch}b").text == "ab", f"U+{ord(ch):04X} survived"


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("4111\u200d1111", "41111111"),  # zero-width joiner
        ("4111\u200b1111", "41111111"),  # zero-width space
        ("4111\u200c1111", "41111111"),  # zero-width non-joiner
        ("4111\u00ad1111", "41111111"),  # soft hyphen
        ("4111\u20601111", "41111111"),  # word joiner
        ("\u202e4111\u202c", "4111"),  # bidi override and pop
        ("\u20664111\u2069", "4111"),  # bidi isolates
        ("4111\ufe0f\U000e0041", "4111"),  # variation selector, tag
        ("４１１１", "4111"),  # full-width digits
        ("𝟒𝟏𝟏𝟏", "4111"),  # mathematical bold digits
        ("٤١١١", "4111"),  # Arabic-Indic digits
        ("४१११", "4111"),  # Devanagari digits
        ("ａｎａ＠ｅｘａｍｐｌｅ．ｃｏｍ", "ana@example.com"),  # full-width letters
        ("𝐚𝐧𝐚", "ana"),  # mathematical bold letters
        ("123‑45–6789", "123-45-6789"),  # non-breaking hyphen, en dash
        ("e\u0301", "é"),  # composed
        ("ﬁle", "file"),  # ligature
    ],
)
def test_normalise_reads_what_a_person_sees(text: str, read: str) -> None:
    assert normalise(text).text == read


def test_a_span_of_the_normalised_text_maps_back_to_the_original() -> None:
    original = "pay ４１１１\u200d１１１１\u200b now"
    n = normalise(original)
    start = n.text.index("4111")
    s, e = n.span(start, start + 8)
    assert original[s:e] == "４１１１\u200d１１１１"  # the joiner inside the span goes too
    assert replace_spans(original, [(s, e, "[CARD]")]) == "pay [CARD]\u200b now"


def test_an_expanding_character_maps_to_its_whole_source() -> None:
    n = normalise("ﬁle")
    assert n.text == "file" and n.span(0, 1) == (0, 1) and n.span(1, 4) == (0, 3)
