"""pii(): personal data found in any string of a value, masked by default, with few false positives."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from duraguard import pii
from duraguard.engine import evaluate
from duraguard.errors import ConfigurationError


async def _mask(value: Any, **settings: Any) -> Any:
    # A tool's result: every field is content. At tool-args a mask leaves the arguments that
    # address the call alone (``to``, ``phone``: tests/test_addresses.py).
    return await evaluate([pii(**settings)], value, tool="send_note", placement="tool-result")


@pytest.mark.parametrize(
    ("text", "kind", "masked"),
    [
        ("write to ana.lopes@example.com today", "email", "write to [EMAIL] today"),
        ("call +14155552671 now", "phone", "call [PHONE] now"),
        ("call +1 415 555 2671 now", "phone", "call [PHONE] now"),
        ("call +1-415-555-2671 now", "phone", "call [PHONE] now"),
        ("call +44 20 7946 0958 now", "phone", "call [PHONE] now"),
        ("call +1 (415) 555-2671 now", "phone", "call [PHONE] now"),
        ("visa 4111 1111 1111 1111 ok", "credit-card", "visa [CARD] ok"),
        ("visa 4111111111111111 ok", "credit-card", "visa [CARD] ok"),
        ("mc 5555-5555-5555-4444 ok", "credit-card", "mc [CARD] ok"),
        ("amex 3782 822463 10005 ok", "credit-card", "amex [CARD] ok"),
        ("amex 3782-822463-10005 ok", "credit-card", "amex [CARD] ok"),
        ("host 10.0.0.1 down", "ipv4", "host [IPV4] down"),
        ("ssn 123-45-6789 on file", "ssn", "ssn [SSN] on file"),
    ],
)
async def test_pii_finds_and_masks_each_kind(text: str, kind: str, masked: str) -> None:
    result = await _mask({"note": text})
    assert result.verdict.action == "mask"
    assert [(d.rule, d.path) for d in result.verdict.detections] == [(f"pii.{kind}", "#/note")]
    assert result.value == {"note": masked}


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("card 4111  1111  1111  1111 ok", "card [CARD] ok"),
        ("card 4111\t1111\t1111\t1111 ok", "card [CARD] ok"),
        ("card 4111\n1111\n1111\n1111 ok", "card [CARD] ok"),
        ("card 4111.1111.1111.1111 ok", "card [CARD] ok"),
        ("card 4111/1111/1111/1111 ok", "card [CARD] ok"),
        ("card 4111_1111_1111_1111 ok", "card [CARD] ok"),
        ("card 4111,1111,1111,1111 ok", "card [CARD] ok"),
        ("card 4111 - 1111 - 1111 - 1111 ok", "card [CARD] ok"),
        ("my number is 123/45/6789 ok", "my number is [SSN] ok"),
        ("my number is 123  45  6789 ok", "my number is [SSN] ok"),
        ("my number is 123-45 6789 ok", "my number is [SSN] ok"),
        ("my number is 123_45_6789 ok", "my number is [SSN] ok"),
        ("write to ana@example\u3002com now", "write to [EMAIL] now"),
        ("write to ana@example\uff61com now", "write to [EMAIL] now"),
        ('write to "ana smith"@example.com now', "write to [EMAIL] now"),
    ],
)
async def test_pii_finds_values_written_with_the_separators_people_type(
    text: str, masked: str
) -> None:
    """Once missed: doubled spaces, tabs, line breaks, dots, slashes, underscores and commas
    between a card's groups; mixed or doubled separators in an SSN; the ideographic full stops
    IDNA reads as a dot (the address is reachable); a quoted local part."""
    result = await _mask({"note": text})
    assert result.value == {"note": masked}


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112 shipped",  # fails Luhn
        "totals: 1,234, 5,678, 9,012 and 3,456",
        "version 1.2.3 / 4.5.6 / 7.8.9",
        "call me at 12:30, 14:45 or 16:00",
        "page 123/45 of volume 6",
    ],
)
async def test_pii_leaves_numbers_with_separators_that_are_not_cards_or_ssns(text: str) -> None:
    result = await _mask({"note": text})
    assert result.verdict.action == "allow", result.verdict.detections


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("charge 4111111111111111.", "charge [CARD]."),
        ("write to ana@example.com.", "write to [EMAIL]."),
        ("the server is 10.0.0.1.", "the server is [IPV4]."),
    ],
)
async def test_pii_finds_a_value_at_the_end_of_a_sentence(text: str, masked: str) -> None:
    result = await _mask(text)
    assert result.value == masked


@pytest.mark.parametrize(
    "text",
    [
        "order 4111111111111112 shipped",  # 16 digits, fails Luhn
        "created at 1700000000000",  # millisecond timestamp
        "upgrade to 1.2.3.4.5",
        "firmware v10.0.0.1",
        "due 2024-01-15",
        "ssn 000-12-3456",
        "ssn 666-12-3456",
        "ssn 912-34-5678",
        "ssn 123-00-6789",
        "host 999.1.1.1",
        "local 555-1234",
        "ref 12345678901234567890",
    ],
)
async def test_pii_does_not_flag_lookalikes(text: str) -> None:
    result = await _mask({"note": text})
    assert result.verdict.action == "allow"
    assert result.verdicts[0].detections == ()
    assert not result.replaced and result.value is None  # nothing to replace, nothing echoed


async def test_pii_rules_can_be_chosen() -> None:
    value = {"note": "card 4111 1111 1111 1111, mail ana@example.com"}
    result = await _mask(value, rules=["email"])
    assert [d.rule for d in result.verdict.detections] == ["pii.email"]
    assert result.value == {"note": "card 4111 1111 1111 1111, mail [EMAIL]"}


async def test_pii_with_only_card_rule_ignores_an_email() -> None:
    result = await _mask({"note": "ana@example.com"}, rules=["credit-card"])
    assert result.verdict.action == "allow"


@pytest.mark.parametrize("action", ["deny", "halt", "observe"])
async def test_pii_action_names_every_kind_and_its_pointer(action: str) -> None:
    value = {"to": "ana@example.com", "lines": ["ok", "card 4111111111111111"], "ip": "10.1.2.3"}
    result = await _mask(value, action=action)
    verdict = result.verdicts[0]
    assert verdict.action == action
    assert verdict.by == "pii"
    assert {(d.rule, d.path) for d in verdict.detections} == {
        ("pii.email", "#/to"),
        ("pii.credit-card", "#/lines/1"),
        ("pii.ipv4", "#/ip"),
    }
    assert "credit-card, email, ipv4" in (verdict.reason or "")
    assert verdict.payload is None


async def test_pii_deny_tells_the_model_to_remove_it() -> None:
    result = await _mask({"to": "ana@example.com"}, action="deny")
    assert result.value is None
    assert (result.verdict.reason or "").endswith("; remove it and call again")


async def test_pii_observe_lets_the_value_through_unchanged() -> None:
    value = {"to": "ana@example.com"}
    result = await _mask(value, action="observe")
    assert result.verdict.action == "allow"
    assert not result.replaced and result.use(value) == value


async def test_pii_mask_walks_nested_structures_and_numbers_that_are_cards() -> None:
    value = {
        "customer": {"contacts": [{"email": "ana@example.com"}, {"phone": "+14155552671"}]},
        "card": 4111111111111111,
        "count": 3,
        "ratio": 0.5,
        "vip": True,
        "note": None,
    }
    result = await _mask(value)
    assert result.value == {
        "customer": {"contacts": [{"email": "[EMAIL]"}, {"phone": "[PHONE]"}]},
        "card": "[CARD]",
        "count": 3,
        "ratio": 0.5,
        "vip": True,
        "note": None,
    }
    assert {d.path for d in result.verdict.detections} == {
        "#/customer/contacts/0/email",
        "#/customer/contacts/1/phone",
        "#/card",
    }


async def test_pii_mask_does_not_change_the_callers_value() -> None:
    value = {"to": "ana@example.com"}
    await _mask(value)
    assert value == {"to": "ana@example.com"}


async def test_pii_log_names_the_kinds_and_never_the_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="duraguard"):
        await _mask({"to": "ana@example.com", "card": "4111 1111 1111 1111"})
    lines = [r for r in caplog.records if r.name == "duraguard"]
    assert len(lines) == 1
    assert lines[0].levelno == logging.DEBUG  # the default: findings are routine
    text = lines[0].getMessage()
    assert "credit-card, email" in text
    assert "send_note" in text
    for secret in ("ana", "example.com", "4111"):
        assert secret not in text


def test_pii_unknown_rule_is_a_configuration_error_listing_known_rules() -> None:
    with pytest.raises(ConfigurationError) as info:
        pii(rules=["passport"])  # type: ignore[list-item]
    message = str(info.value)
    assert "unknown pii rule 'passport'" in message
    assert "known: email, phone, credit-card, ipv4, ipv6, ssn" in message


def test_pii_default_action_is_mask_with_every_rule() -> None:
    assert pii().settings == {
        "rules": ["email", "phone", "credit-card", "ipv4", "ipv6", "ssn"],
        "action": "mask",
        "region": "US",
        "log_level": "debug",
    }


# -- issue 11 and issue 8 point 7 ---------------------------------------------------------------


@pytest.mark.parametrize(
    "card",
    [
        "4111\u200d1111\u200d1111\u200d1111",
        "4111\u200b1111\u200b1111\u200b1111",
        "4111\u200c1111\u200c1111\u200c1111",
        "4111\u00ad1111\u00ad1111\u00ad1111",
        "4111\u20601111\u20601111\u20601111",
        "\u202e4111 1111 1111 1111",
        "４１１１ １１１１ １１１１ １１１１",
        "𝟒𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏𝟏",
        "٤١١١١١١١١١١١١١١١",
    ],
)
async def test_pii_masks_a_card_hidden_by_unicode_in_the_original_text(card: str) -> None:
    result = await _mask({"body": f"pay with {card} today"})
    assert result.verdict.action == "mask"
    masked = result.value["body"]
    assert masked.startswith("pay with ") and masked.endswith(" today")
    assert "[CARD]" in masked
    assert not any(ch.isdigit() for ch in masked.replace("[CARD]", ""))


def _tags(text: str) -> str:
    """``text`` in Unicode tag characters: drawn as nothing, read as the ASCII they mirror."""
    return "".join(chr(0xE0000 + ord(c)) for c in text)


@pytest.mark.parametrize(
    ("hidden", "mask"),
    [
        ("4111 1111 1111 1111", "[CARD]"),
        ("ana@example.com", "[EMAIL]"),
        ("SSN 123-45-6789", "[SSN]"),
        ("call (415) 555-0132", "[PHONE]"),
        ("ana&#64;example.com", "[EMAIL]"),
    ],
    ids=["card", "email", "ssn", "phone", "an escaped email"],
)
async def test_pii_masks_what_a_text_hides_in_tag_characters(hidden: str, mask: str) -> None:
    """Tag characters draw as nothing and mirror ASCII: a card or an address written in them
    leaves unseen by whoever reads the mail, and whoever gets it reads it back. Read as the text
    they mirror, and masked where they stand."""
    result = await _mask({"body": "Thanks for your order!" + _tags(f"fyi: {hidden} ok") + " Bye."})
    assert result.verdict.action == "mask"
    masked = result.value["body"]
    assert masked.startswith("Thanks for your order!") and masked.endswith(" Bye.")
    assert mask in masked
    read = "".join(chr(ord(c) - 0xE0000) if ord(c) >= 0xE0000 else c for c in masked)
    assert hidden not in read and read.count(mask) == 1


@pytest.mark.parametrize(
    ("hidden", "mask"),
    [("4111 1111 1111 1111", "[CARD]"), ("ana@example.com", "[EMAIL]")],
    ids=["card", "email"],
)
async def test_pii_masks_tag_characters_written_as_json_escapes(hidden: str, mask: str) -> None:
    """Tag characters left as JSON escapes in a text (each a surrogate pair, ``\\udb40\\udc34``):
    a model reads the escapes, then the tags; so does pii. Before, the escapes were read as tag
    characters, which draw as nothing, and the card went through."""
    escaped = json.dumps(_tags(hidden))[1:-1]
    result = await _mask({"body": f"pay to {escaped} today"})
    assert result.verdict.action == "mask"
    assert result.value["body"] == f"pay to {mask} today"
    plain = await _mask({"body": "x " + json.dumps(_tags("hello world"))[1:-1]})
    assert plain.verdict.action == "allow"


@pytest.mark.parametrize(
    "body",
    [
        "pay " + _tags("4111 1111") + "\u200b" + _tags(" 1111 1111") + " thanks",
        "pay " + "\ufe0f".join(_tags("4111 1111 1111 1111")) + " thanks",
        "pay 4111 1111 " + _tags("1111 1111") + " thanks",
        "hi " + _tags("john.doe") + "\u200b" + _tags("@example.com") + " thanks",
    ],
    ids=["runs split by a zero-width space", "every character apart", "half drawn, half hidden",
         "an address in two runs"],
)  # fmt: skip
async def test_pii_masks_what_tag_characters_hide_split_across_runs(body: str) -> None:
    """A model reads tag characters where they stand, invisible characters between them
    dropped and the drawn text around them included: so is the text read here."""
    result = await _mask({"body": body})
    assert result.verdict.action == "mask"
    read = "".join(
        chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else c
        for c in result.value["body"]
        if c not in "\u200b\ufe0f"
    )
    assert "1111" not in read and "john.doe@" not in read


async def test_tag_characters_inside_a_number_still_read_through() -> None:
    # A tag character inside the digits splits nothing (it draws as nothing): the card is
    # found as drawn, and its own tag character is not read as a second finding.
    result = await _mask({"body": "pay with 4111\U000e00201111 1111 1111 today"})
    assert result.value["body"] == "pay with [CARD] today"
    flag = "\U0001f3f4" + _tags("gbsct") + "\U000e007f"  # a flag's own tag characters
    assert (await _mask({"body": f"cheers {flag} from Glasgow"})).verdict.action == "allow"


async def test_pii_findings_carry_offsets_and_the_pointer() -> None:
    text = "mail ana@example.com or call (415) 555-0132"
    result = await _mask({"note": text}, action="observe")
    located = [(d.rule, d.path, d.start, d.end) for d in result.verdicts[0].detections]
    assert located == [
        ("pii.email", "#/note", 5, 20),
        ("pii.phone", "#/note", 29, 43),
    ]
    assert text[5:20] == "ana@example.com" and text[29:43] == "(415) 555-0132"


@pytest.mark.parametrize(
    ("text", "region", "found"),
    [
        ("call (415) 555-0132", "US", True),
        ("call 09-7625400", "IL", True),
        ("call 09-7625400", "US", False),  # not a US number
        ("call 020 7946 0958", "GB", True),
        ("call +44 20 7946 0958", "US", True),  # international spellings read anywhere
    ],
)
async def test_pii_reads_national_phone_formats_for_its_region(
    text: str, region: str, found: bool
) -> None:
    result = await _mask({"note": text}, region=region, rules=["phone"])
    assert (result.verdict.action == "mask") is found


def test_pii_region_must_be_a_known_country() -> None:
    with pytest.raises(ConfigurationError, match="unknown phone region 'XX'"):
        pii(region="XX")


@pytest.mark.parametrize(
    "text",
    [
        "order 4155550132 shipped",  # a valid US number, but nothing says phone
        "invoice INV-2024-000123",  # digits grouped unlike a phone
        "at 2024-01-15 10:30:00",
        "Chrome 120.0.6099.109",
        "version 1.2.3.4",
        "release-1.2.3.4",
        "v1.2.3.4",
        "ssn 078-05-1120",  # the Woolworth wallet card
        "ssn 219-09-9999",  # the SSA pamphlet
        "nine digits 123456789",
    ],
)
async def test_pii_leaves_versions_orders_and_sample_numbers_alone(text: str) -> None:
    assert (await _mask({"note": text})).verdict.action == "allow"


@pytest.mark.parametrize(
    ("value", "masked"),
    [
        ({"note": "SSN 123 45 6789"}, {"note": "SSN [SSN]"}),
        ({"note": "SSN 123.45.6789"}, {"note": "SSN [SSN]"}),
        ({"note": "social security number 123456789"}, {"note": "social security number [SSN]"}),
        ({"ssn": "123456789"}, {"ssn": "[SSN]"}),
        ({"net": "route 10.0.0.0/8 and 2001:db8::/32"}, {"net": "route [IPV4] and [IPV6]"}),
        ({"ip": "fe80::1%eth0"}, {"ip": "[IPV6]"}),
        ({"to": "user@xn--bcher-kva.example"}, {"to": "[EMAIL]"}),
        ({"to": "user@bücher.example"}, {"to": "[EMAIL]"}),
        ({"phone": "4155550132"}, {"phone": "[PHONE]"}),
    ],
)
async def test_pii_masks_whole_spans_in_real_world_spellings(
    value: dict[str, str], masked: dict[str, str]
) -> None:
    assert (await _mask(value)).value == masked


async def test_pii_judges_a_big_value_in_full_with_offsets_into_it() -> None:
    filler = "nothing to see here " * 1000  # over the size read in a thread
    result = await _mask({"log": filler + "mail ana@example.com"})
    assert result.value == {"log": filler + "mail [EMAIL]"}
    (hit,) = result.verdict.detections
    assert (hit.start, hit.end) == (len(filler) + 5, len(filler) + 20)


def test_a_text_with_too_few_digits_for_any_rule_is_read_as_the_full_reading_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ASCII text with no @, no escape and fewer than four digits (or one and two colons, for
    # ``::1``) is not read at all: every such text, read in full, must find nothing either.
    import random

    from duraguard.checks import _pii_find

    rnd = random.Random(29)
    texts = ["::1", "fe80::1", "1.2.3.4", "A17", "20.0", "x [at] y.com", "5 5 5 0 1 0 0"]
    texts += ["".join(rnd.choices("0123456789:.@-/ abcfx%&#;[]()+", k=n)) for n in range(1, 14)]
    texts += ["".join(rnd.choices("0123:. af", k=n)) for n in range(1, 14) for _ in range(300)]
    keys = ("", "phone", "ssn")
    gated = {(t, k): _pii_find.find(t, key=k) for t in texts for k in keys}
    monkeypatch.setattr(_pii_find, "_may_hold", lambda _text: True)
    assert {(t, k): _pii_find.find(t, key=k) for t in texts for k in keys} == gated
    assert gated[("::1", "")] == [("ipv6", 0, 3)]
