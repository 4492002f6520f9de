"""Content checks read the whole value (issue 24, class 2): every key and every leaf at every
depth, every form a number takes, and text with every code point that renders as nothing or as
a mark; a masked key still makes a valid value that loses nothing."""

from __future__ import annotations

import sys
import unicodedata
from typing import Any

import pytest

from duraguard import moderation, pii
from duraguard.checks import Classification, address
from duraguard.checks._text import normalise
from duraguard.engine import evaluate
from duraguard.guardrail import Resources

CARD = "4111 1111 1111 1111"


async def _pii(value: Any, **settings: Any) -> Any:
    return await evaluate([pii(**settings)], value, tool="send_note")


async def _refused(value: Any) -> bool:
    return (await evaluate([address()], value, tool="fetch")).tripped


# -- keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({CARD: "x"}, "credit-card"),
        ({"4111111111111111": 1}, "credit-card"),
        ({"ana.lopes@example.com": {"role": "admin"}}, "email"),
        ({"ssn 123-45-6789": True}, "ssn"),
        ({"ssn": {"123456789": "on file"}}, "ssn"),  # the key's own key says what it is
        ({"a": [{"b": {"mail ana@example.com": None}}]}, "email"),  # a key deep inside
        ({"10.0.0.1": "db"}, "ipv4"),
    ],
)
async def test_pii_judges_every_key_at_every_depth(value: Any, kind: str) -> None:
    result = await _pii(value, action="deny")
    assert result.verdict.action == "deny"
    assert [(d.rule, d.detail) for d in result.verdict.detections] == [(f"pii.{kind}", "key")]


async def test_a_masked_key_leaves_a_valid_value_with_every_member_kept() -> None:
    value = {
        "ana@example.com": 1,
        "bob@example.com": 2,
        "[EMAIL KEY]": 3,  # a key that already reads like the mask
        "notes": {"call (415) 555-0132": ["keep me"], "plain": "ok"},
    }
    result = await _pii(value)
    assert result.verdict.action == "mask"
    masked = result.value
    kept = [1, 2, 3, {"call [PHONE KEY]": ["keep me"], "plain": "ok"}]
    assert sorted(masked.values(), key=str) == kept
    assert masked["[EMAIL KEY]"] == 3  # a clean key keeps its name
    assert not any("@" in k for k in masked)
    assert list(masked) == ["[EMAIL KEY] (2)", "[EMAIL KEY] (3)", "[EMAIL KEY]", "notes"]


async def test_a_key_and_its_value_are_masked_together() -> None:
    result = await _pii({"ana@example.com": "reach ana@example.com"})
    assert result.value == {"[EMAIL KEY]": "reach [EMAIL]"}
    assert [(d.path, d.detail) for d in result.verdict.detections] == [
        ("#/ana@example.com", "key"),
        ("#/ana@example.com", None),
    ]


async def test_a_masked_key_in_a_call_with_an_address_is_not_read_as_a_new_address() -> None:
    # The engine refuses a mask that changes where a call goes; a renamed key is not that.
    value = {"to": "bob@example.com", "scores": {"ana@example.com": 5, "carl@example.com": 7}}
    result = await evaluate([pii()], value, tool="send_email")
    assert result.verdict.action == "mask", result.verdict.reason
    assert result.value == {
        "to": "bob@example.com",  # where the call goes is left to the destination checks
        "scores": {"[EMAIL KEY]": 5, "[EMAIL KEY] (2)": 7},
    }


@pytest.mark.parametrize(
    "value",
    [
        {"http://169.254.169.254/latest/meta-data/": "x"},
        {"see http://127.0.0.1:8080/admin": 1},
        {"a": [{"http://metadata.google.internal/": True}]},
        {"hosts": {"127.0.0.1": {"port": 80}}},  # a map keyed by host, under a host-like key
        {"servers": {"metadata.google.internal": "x"}},
    ],
)
async def test_address_judges_keys(value: Any) -> None:
    assert await _refused(value)


# -- lists and numbers under host-like keys --------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"host": ["127.0.0.1"]},
        {"ip": ["169.254.169.254"]},
        {"hosts": ["example.org", "10.0.0.5"]},
        {"servers": [["localhost"]]},
        {"callback_urls": ["0x7f000001"]},
        {"baseUrl": ["metadata.google.internal"]},
        {"target-host": ["127.1"]},
        {"host": 2130706433},  # a number a client formats into a URL
        {"ip": [2130706433]},
        {"endpoint": {"hosts": ["127.0.0.1"]}},
    ],
)
async def test_address_reads_hosts_in_lists_and_numbers_under_host_like_keys(value: Any) -> None:
    assert await _refused(value)


@pytest.mark.parametrize(
    "value",
    [
        {"hosts": ["example.org", "api.example.com"]},
        {"server": {"name": "prod", "port": 8080}},  # a plain name under a host-like key's object
        {"ids": [1, 2, 3]},
        {"servers": {"primary": "example.org"}},
        {"host": [8.8], "port": [443]},
    ],
)
async def test_address_leaves_public_hosts_and_plain_members_alone(value: Any) -> None:
    assert not await _refused(value)


# -- every number form ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        4111111111111111,
        4111111111111111.0,  # a float, as JSON 4111111111111111.0
        4.111111111111111e15,  # the same in exponent form
        -4111111111111111,
        -4111111111111111.0,
        4111111111111111110,  # 19 digits
    ],
)
async def test_pii_reads_a_card_written_as_any_json_number(number: float) -> None:
    result = await _pii({"n": number, "in": [number]})
    assert result.verdict.action == "mask"
    assert result.value == {"n": "[CARD]", "in": ["[CARD]"]}


async def test_pii_reads_numbers_with_their_keys_context() -> None:
    value = {"ssn": 123456789, "fax": 4155550132.0, "count": 123456789}
    result = await _pii(value)
    assert result.value == {"ssn": "[SSN]", "fax": "[PHONE]", "count": 123456789}


# -- invisible characters and marks ---------------------------------------------------------------


def _code_points(*categories: str) -> list[str]:
    limit = sys.maxunicode + 1
    return [chr(c) for c in range(limit) if unicodedata.category(chr(c)) in categories]


BLANKS = [
    "\u2800",
    "\u3164",
    "\u115f",
    "\u1160",
    "\uffa0",
    "\u034f",
    "\u17b4",
    "\ufe0f",
    "\U000e0041",
]


@pytest.mark.parametrize(
    "hidden",
    [
        "4111\u28001111\u28001111\u28001111",  # braille blank between groups
        "4\u0301111 1111 1111 1111",  # a combining accent on a digit
        "4\u20dd111 1111 1111 1111",  # an enclosing circle (Me)
        "4111\u16801111\u16801111\u16801111",  # ogham space mark (Zs)
        "4111\u3164 1111\u3164 1111 1111",  # Hangul filler
        "4111\uffa01111\uffa01111\uffa01111",  # half-width Hangul filler
        "4\u0336111 1\u0336111\u0336 1111 1111",  # strike-through marks
    ],
)
async def test_pii_reads_a_card_through_blank_and_combining_characters(hidden: str) -> None:
    result = await _pii({"body": f"pay with {hidden} today"})
    assert result.verdict.action == "mask"
    assert result.value == {"body": "pay with [CARD] today"}


def test_every_mark_and_blank_between_digits_is_read_through() -> None:
    # Derived from the Unicode database: every non-spacing and enclosing mark, every format
    # character, every space separator and the blank-rendering letters and symbols.
    marks = _code_points("Mn", "Me")
    spaces = _code_points("Zs")
    assert len(marks) > 1800 and len(spaces) >= 17
    for ch in [*marks, *_code_points("Cf"), *BLANKS]:
        assert normalise(f"41{ch}11").text == "4111", f"U+{ord(ch):04X} splits the digits"
    for ch in spaces:
        assert normalise(f"41{ch}11").text == "41 11", f"U+{ord(ch):04X} is not read as a space"


def test_marks_that_spell_a_word_in_their_script_are_kept() -> None:
    for word in ("हिन्दी", "שָׁלוֹם", "مُحَمَّد", "ภาษาไทย"):  # Devanagari, Hebrew, Arabic, Thai
        assert normalise(word).text == unicodedata.normalize("NFKC", word)
    assert normalise("e\u0301").text == "é"  # Latin: composed where a composed letter exists


@pytest.mark.parametrize(
    ("written", "masked"),
    [
        ("https://x.example/?to=ana@example.com&x=1", "https://x.example/?to=[EMAIL]&x=1"),
        ("https://x.example/send/ana@example.com", "https://x.example/send/[EMAIL]"),
        ("see https://x.example/#ana@example.com", "see https://x.example/#[EMAIL]"),
        ('write "ana smith"@example.com', "write [EMAIL]"),
    ],
)
async def test_an_address_in_a_link_is_masked_and_the_link_kept(written: str, masked: str) -> None:
    """Only the address is hidden: the host and path before it still say where the link goes."""
    result = await _pii({"body": written})
    assert result.value == {"body": masked}


async def test_pii_masks_an_email_with_marks_on_its_letters_whole() -> None:
    result = await _pii({"body": "write a\u0336n\u0336a\u0336@example.com now"})
    assert result.value == {"body": "write [EMAIL] now"}


# -- escapes: a value written the way a URL or a page carries it -----------------------------------


@pytest.mark.parametrize(
    ("written", "masked"),
    [
        ("https://x.example/?c=4111%201111%201111%201111", "https://x.example/?c=[CARD]"),
        ("https://x.example/?c=4111+1111+1111+1111&ok=1", "https://x.example/?c=[CARD]&ok=1"),
        # The mask covers the address, not the link before it (a local part may hold / ? =, but
        # in a link they end the URL's own parts).
        ("https://x.example/?to=ana%40example.com", "https://x.example/?to=[EMAIL]"),
        ("https://x.example/?to=ana%2540example.com", "https://x.example/?to=[EMAIL]"),  # twice
        ("https://x.example/?n=%34%31%31%31%31%31%31%31%31%31%31%31%31%31%31%31", None),
        ("https://x.example/?c=%EF%BC%94111111111111111", None),  # a fullwidth 4, as UTF-8
        (
            "pay &#52;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49;&#49; now",
            None,
        ),
        ("write ana&#x40;example.com now", "write [EMAIL] now"),
        ("write ana&commat;example&period;com now", "write [EMAIL] now"),
        ("write ana [at] example [dot] com now", "write [EMAIL] now"),
        ("write ana(at)example(dot)com now", "write [EMAIL] now"),
        ("write ana {at} example.com now", "write [EMAIL] now"),
        ('{"card": "\\u0034111111111111111"}', None),  # JSON text inside a text
        ("ssn 123%2D45%2D6789 on file", "ssn [SSN] on file"),
    ],
)
async def test_pii_reads_values_through_the_escapes_urls_and_pages_use(
    written: str, masked: str | None
) -> None:
    """Percent-encoding (a URL's query is how a value leaves for another host), HTML character
    references, JSON escapes and the bracketed at and dot: each is what it stands for to
    whoever reads it next. The mask covers the escaped form in the original."""
    result = await _pii({"body": written})
    assert result.verdict.action == "mask", written
    body = result.value["body"]
    if masked is not None:
        assert body == masked
    assert "[" in body and not any(d in body.replace("[", " ") for d in ("4111", "@"))


@pytest.mark.parametrize(
    "written",
    [
        "50%25 off, then 20%25 more",
        "https://x.example/?q=%E2%82%AC100&page=2",  # EUR 100
        "AT&T and R&D &amp; more &#169; 2026",
        "meet me [at] the cafe (dot) soon",
        "version 4.1.1&#46;1",
        "a 1 [at] 2 problem",
    ],
)
async def test_escapes_that_stand_for_nothing_personal_are_left_alone(written: str) -> None:
    result = await _pii({"body": written})
    assert result.verdict.action == "allow", (written, result.verdict.reason)


@pytest.mark.parametrize(
    ("written", "masked"),
    [
        ("write ana at example dot com now", "write [EMAIL] now"),
        ("write ANA AT EXAMPLE DOT COM now", "write [EMAIL] now"),
        ("mail ana.lopez at mail dot example dot co dot uk today", "mail [EMAIL] today"),
        ("write ana @ example.com now", "write [EMAIL] now"),
        ("write ana@ example.com now", "write [EMAIL] now"),
        ("write ana @example dot com now", "write [EMAIL] now"),
        ("card 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 on file", "card [CARD] on file"),
        ("ssn 1 2 3 4 5 6 7 8 9 on file", "ssn [SSN] on file"),
        ("call 4 1 5 5 5 5 2 6 7 1 tonight", "call [PHONE] tonight"),
        ("host 10 dot 0 dot 0 dot 1 is mine", "host [IPV4] is mine"),
    ],
)
async def test_pii_reads_values_spelled_out_to_dodge_a_reader(written: str, masked: str) -> None:
    """The at and dot of an address as words, an @ with spaces about it, digits spaced one by
    one: each is read as the value it spells, and the mask covers the spelled form."""
    result = await _pii({"body": written})
    assert result.verdict.action == "mask", (written, result.verdict.reason)
    assert result.value == {"body": masked}


@pytest.mark.parametrize(
    "written",
    [
        "we are at booking.com today and at home dot later",
        "the dot com bubble at its height in 2000",
        "ping @ana on slack at 5 @ 6pm",
        "scores 1 2 3 4 5 6 7 8 9 today",
        "she looked at me, dot by dot, at last",
    ],
)
async def test_words_like_at_and_dot_in_prose_are_left_alone(written: str) -> None:
    result = await _pii({"body": written})
    assert result.verdict.action == "allow", (written, result.verdict.reason)


@pytest.mark.parametrize(
    "written",
    [
        "I booked it at expedia dot com last week",
        "we stayed at hilton dot com prices",
        "meet @ noon.Tomorrow works",
        "Mozilla/5.0 Chrome/120.0.0.0 Safari/537.36",
        "pip install foo==1.2.3.4",
        "See section 1.2.3.4 of the contract, and \u00a7 4.1.2.3.",
    ],
)
async def test_prose_that_only_looks_spelled_or_versioned_is_left_alone(written: str) -> None:
    """Where something happens is not an address ("booked it at expedia dot com"), and a
    product's version, a pinned package or a section number is not a host."""
    result = await _pii({"body": written})
    assert result.verdict.action == "allow", (written, result.verdict.reason)


@pytest.mark.parametrize(
    ("written", "masked"),
    [
        ("-4111111111111111", "-[CARD]"),
        ("card-4111111111111111 on file", "card-[CARD] on file"),
        ("ref=4111111111111111", "ref=[CARD]"),
    ],
)
async def test_a_card_after_a_dash_is_masked(written: str, masked: str) -> None:
    result = await _pii({"body": written})
    assert result.value == {"body": masked}
    # a dash between digits still joins a longer number, which no card is
    assert (await _pii({"body": "1234-4111111111111111"})).verdict.action == "allow"


@pytest.mark.parametrize(
    "written", ["ip 010.000.000.001 is ours", "ip 192.168.001.010 is ours", "ip 000.000.000.000"]
)
async def test_pii_reads_an_ipv4_written_with_leading_zeros(written: str) -> None:
    """``ipaddress`` refuses leading zeros; a person and most resolvers read them."""
    result = await _pii({"body": written})
    assert result.verdict.action == "mask"
    assert "[IPV4]" in result.value["body"]
    assert (await _pii({"body": "ip 192.168.001.256"})).verdict.action == "allow"


@pytest.mark.parametrize(
    ("written", "masked"),
    [
        ({"card": ["4111", "1111", "1111", "1111"]}, {"card": ["[CARD]"] * 4}),
        ({"c": [4111, 1111, 1111, 1111]}, {"c": ["[CARD]"] * 4}),
        ({"a": "4111", "b": "1111", "c": "1111", "d": "1111"}, dict.fromkeys("abcd", "[CARD]")),
        ({"n": ["note", "4111 11", "11 1111", "1111", "end"]},
         {"n": ["note", "[CARD]", "[CARD]", "[CARD]", "end"]}),
        ({"x": ["\uff14\uff11\uff11\uff11", "1111", "1111", "1111"]}, {"x": ["[CARD]"] * 4}),
        ({"amex": ["3782", "822463", "10005"]}, {"amex": ["[CARD]"] * 3}),
        ({"rows": [{"p": ["7", "4111", "1111", "1111", "1111"]}]},
         {"rows": [{"p": ["7", "[CARD]", "[CARD]", "[CARD]", "[CARD]"]}]}),
    ],
    ids=["strings", "numbers", "object members", "groups of other sizes", "fullwidth", "amex",
         "behind a stray digit"],
)  # fmt: skip
async def test_pii_masks_a_card_split_across_neighbouring_leaves(written: Any, masked: Any) -> None:
    """Each part alone is four digits; in order they are the number, and a reader joins them."""
    result = await _pii(written)
    assert result.verdict.action == "mask", result.verdict.reason
    assert result.value == masked
    assert {d.rule for d in result.verdict.detections} == {"pii.credit-card"}


@pytest.mark.parametrize(
    "written",
    [
        {"scores": [4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]},  # Luhn fails
        {"ids": ["1234", "5678", "9012", "3456"]},  # no card starts 1
        {"a": ["4111", "1111"], "b": ["1111", "1111"]},  # neighbours in different lists
        {"c": ["4111", {"k": "v"}, "1111", "1111", "1111"]},  # split by an object
        {"c": ["4111", "1111", "and", "1111", "1111"]},  # split by a word
    ],
    ids=["a list of scores", "ids", "two lists", "an object between", "a word between"],
)
async def test_digit_groups_that_make_no_card_together_are_left_alone(written: Any) -> None:
    result = await _pii(written)
    assert result.verdict.action == "allow", result.verdict.reason


# -- moderation reads keys and text through marks --------------------------------------------------


async def test_moderation_gives_the_classifier_keys_and_text_without_marks() -> None:
    seen: list[str] = []

    def classify(text: str) -> Classification:
        seen.append(text)
        return Classification()

    value = {"how to hurt people": {"k\u0336i\u0336l\u0336l\u0336": ["now"]}}
    resources = Resources(classifiers={"default": classify})
    await evaluate([moderation()], value, placement="pre-prompt", resources=resources)
    assert seen == ["how to hurt people\nkill\nnow"]


async def test_moderation_gives_the_classifier_text_with_its_escapes_read() -> None:
    seen: list[str] = []

    def classify(text: str) -> Classification:
        seen.append(text)
        return Classification()

    value = {"q": "how to k%69ll", "html": "k&#105;ll &amp; hurt", "json": "\\u006bill"}
    resources = Resources(classifiers={"default": classify})
    await evaluate([moderation()], value, placement="pre-prompt", resources=resources)
    assert seen == ["q\nhow to kill\nhtml\nkill & hurt\njson\nkill"]
