"""The finders of :mod:`duraguard.checks.pii`: each kind of personal data in a normalised text,
as spans; :func:`find` runs them (most exact first) and maps the spans back to the original.

See :mod:`duraguard.checks.pii` for what each finder accepts and why. Every finder is linear in
its text: each regex scans the text once, every look at the words before a match reads a bounded
window, phone numbers are read window by window, overlaps between rules are settled in one merge.
Each step is counted (:func:`duraguard._deadline.spend`): under a deadline, a finder stops.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Literal

import phonenumbers

from .._deadline import spend
from .._drawn import TAG_ASCII, TAG_RUN
from ._escapes import escaped, unescape
from ._text import normalise, replace_spans

Rule = Literal["email", "phone", "credit-card", "ipv4", "ipv6", "ssn"]
RULES: tuple[Rule, ...] = ("email", "phone", "credit-card", "ipv4", "ipv6", "ssn")
MASKS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "credit-card": "[CARD]",
    "ipv4": "[IPV4]",
    "ipv6": "[IPV6]",
    "ssn": "[SSN]",
}

Span = tuple[int, int]
Finder = Callable[[str, str, str], Iterator[Span]]
"""``(normalised text, region, key) -> spans``; ``key`` is the leaf's key, lower-cased."""

# -- email ----------------------------------------------------------------------------------------

# Internationalised too: Unicode local parts and domains (bücher.example) and punycode labels
# (xn--bcher-kva.example); the top-level label is letters or punycode. A quoted local part
# ("ana smith"@example.com) is an address too.
_EMAIL = re.compile(
    r"(?:(?<![\w.+%'-])\w[\w.%+'!#$&*/=?^`{|}~-]{0,63}|\"[^\"\\\r\n]{1,62}\")@"
    r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+(?:[^\W\d_]{2,63}|xn--[a-z0-9-]{1,59})(?![\w-])",
    re.IGNORECASE,
)


_URL_PARTS = "/?=&#"
"""Characters a local part may hold (RFC 5322) that, in practice, end the URL before an address
(``https://x.example/?to=ana@example.com``): the address starts after the last of them."""


def _emails(text: str, region: str, key: str) -> Iterator[Span]:
    if "@" in text:
        spend(len(text))
        for m in _EMAIL.finditer(text):
            start, end = m.span()
            if text[start] != '"':
                local = text[start : text.index("@", start)]
                cut = max(local.rfind(c) for c in _URL_PARTS)
                if 0 <= cut < len(local) - 1 and (
                    local[cut + 1].isalnum() or local[cut + 1] == "_"
                ):
                    start += cut + 1
            yield start, end


# -- credit card ----------------------------------------------------------------------------------

# Between digits, up to three separators of any kind a person types: spaces, tabs, line breaks,
# dashes, dots, slashes, underscores, commas, and the plus a URL's query writes for a space
# ("4111 - 1111", "4111/1111", "4111  1111", "4111+1111").
CARD_SEPARATORS = r"[\s._/,+\-]"
_CARD = re.compile(
    rf"(?<![0-9.])(?<![0-9]-)(?:[0-9]{CARD_SEPARATORS}{{0,3}}){{12,18}}[0-9](?![0-9]|\.[0-9])"
)
_NOT_DIGIT = re.compile(r"[^0-9]")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_prefix_ok(d: str) -> bool:
    n = len(d)
    if d[0] == "4":
        return n in (13, 16, 19)  # Visa
    p2, p3, p4, p6 = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16  # Mastercard
    if p2 in (34, 37):
        return n == 15  # American Express
    if d.startswith(("6011", "65")) or 644 <= p3 <= 649 or 622126 <= p6 <= 622925:
        return 16 <= n <= 19  # Discover
    if 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # JCB
    if p2 in (36, 38, 39) or 300 <= p3 <= 305:
        return 14 <= n <= 19  # Diners Club
    if p2 == 62:
        return 16 <= n <= 19  # UnionPay
    if d[:2] in ("50", "56", "57", "58", "63", "67"):
        return 12 <= n <= 19  # Maestro
    return False


def card_ok(digits: str) -> bool:
    """Whether a run of digits is a card number: its length, a real card's prefix, Luhn."""
    return 13 <= len(digits) <= 19 and _card_prefix_ok(digits) and luhn_ok(digits)


def _cards(text: str, region: str, key: str) -> Iterator[Span]:
    spend(len(text))
    for m in _CARD.finditer(text):
        if card_ok(_NOT_DIGIT.sub("", m.group(0))):
            yield m.span()


# -- SSN ------------------------------------------------------------------------------------------

# Separators a person types (dashes, spaces, dots, slashes, underscores; up to three, mixed:
# "123-45 6789", "123  45  6789", "123/45/6789"), or none at all where the words before or the
# key say it is an SSN.
_SEP = r"[\s./_\-]{0,3}"
_SSN = re.compile(
    rf"(?<![0-9\-.])([0-9]{{3}})({_SEP})([0-9]{{2}})({_SEP})([0-9]{{4}})(?![0-9]|[-./][0-9])"
)
_SSN_WORDS = re.compile(
    r"(?:\bssns?\b|\bsocial[ -]?security\b|\bsoc\.?[ -]?sec\b|\bss[ -]?(?:#|no\b|num)|\bssa\b"
    r"|\bsozialversicherung|\bsecurite sociale\b|\bseguro social\b)[^\n]{0,32}$",
    re.IGNORECASE,
)
_SSN_LOOKBACK = 64
"""How far before a bare number the SSN words are looked for (the longest word and the 32
characters allowed after it fit); never from the start of the text, which made every bare
9-digit number cost the whole text before it."""
_SSN_KEYS = ("ssn", "social", "socsec", "ss_number")
# Numbers printed in public material that no person holds (the SSA's own list): the wallet card
# sold by Woolworth and the number in the 1940s SSA pamphlet.
SAMPLE_SSNS = frozenset({"078051120", "219099999"})


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """The SSA's rules: area not 000, 666 or 9xx; group not 00; serial not 0000; not a sample."""
    return (
        area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
        and area + group + serial not in SAMPLE_SSNS
    )


def _ssns(text: str, region: str, key: str) -> Iterator[Span]:
    spend(len(text))
    keyed = any(k in key for k in _SSN_KEYS)
    for m in _SSN.finditer(text):
        area, sep, group, sep2, serial = m.groups()
        if not ssn_ok(area, group, serial):
            continue
        if (sep and sep2) or keyed:
            yield m.span()
            continue
        spend(_SSN_LOOKBACK)
        if _SSN_WORDS.search(text, max(0, m.start() - _SSN_LOOKBACK), m.start()):
            yield m.span()


# -- IP addresses ---------------------------------------------------------------------------------

_IPV4 = re.compile(
    r"(?<![\w.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?:/(?:3[0-2]|[12][0-9]|[0-9])(?![0-9]))?"
    r"(?![\w]|\.[0-9])"
)
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}(?:(?<=:)(?:[0-9]{1,3}\.){3}[0-9]{1,3}|[0-9a-f]{1,4})?"
    r"(?:%[\w-]{1,32})?(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9])(?![0-9]))?(?![\w:]|\.[0-9])",
    re.IGNORECASE,
)
# "v1.2.3.4", "version 1.2.3.4", "release-1.2.3.4", "upgraded to 1.2.3.4": versions, not hosts.
_VERSION_BEFORE = re.compile(
    r"(?:\bv|\bvers?\.?|\bversions?|\brel\.?|\breleases?|\bbuild|\bfirmware|\bfw|\bkernel"
    r"|\bpatch|\bsdk|\btag|\b(?:up|down)grad(?:e|ed|ing)(?:\s+to)?|\bupdat(?:e|ed|ing)\s+to"
    r"|\bbump(?:ed)?\s+to|\bsection|\bsec\.|§|\bclause|\bchapter|\bpara(?:graph)?|[=<>~!]="
    r"|[A-Za-z]/)\s*[:=#-]?\s*$",
    re.IGNORECASE,
)
_VERSION_AFTER = re.compile(r"[-+~](?:alpha|beta|rc|dev|pre|snapshot|final|ga|build)", re.I)
_VERSION_KEYS = ("version", "release", "build", "firmware", "tag")


def _versionish(text: str, start: int, end: int, key: str) -> bool:
    return (
        any(k in key for k in _VERSION_KEYS)
        or _VERSION_BEFORE.search(text, max(0, start - 24), start) is not None
        or _VERSION_AFTER.match(text, end) is not None
    )


def _ipv4s(text: str, region: str, key: str) -> Iterator[Span]:
    if text.count(".") < 3:
        return
    spend(len(text))
    for m in _IPV4.finditer(text):
        # Leading zeros (010.000.000.001) are refused by ipaddress but read by a person and by
        # most resolvers: each octet is read as the number it writes.
        octets = m.group(0).split("/", 1)[0].split(".")
        if any(int(o) > 255 for o in octets):
            continue
        if not _versionish(text, m.start(), m.end(), key):
            yield m.span()


def _ipv6s(text: str, region: str, key: str) -> Iterator[Span]:
    if text.count(":") < 2:
        return
    spend(len(text))
    for m in _IPV6.finditer(text):
        core = m.group(0).split("/", 1)[0].split("%", 1)[0]
        if not any(c.isdigit() for c in core):
            continue  # "ab::cd", "dead::beef": words far more often than addresses
        try:
            ipaddress.IPv6Address(core)
        except ValueError:
            continue
        yield m.span()


# -- phone ----------------------------------------------------------------------------------------

# A bare run of digits is an order number, an account or a timestamp more often than a phone:
# it counts only after words like these, or under a phone-like key.
_PHONE_WORDS = re.compile(
    r"(?:\b(?:phone|ph|tel|telephone|mobile|mob|cell|cellphone|fax|call|calling|text|sms"
    r"|whatsapp|signal|contact|reach|dial|ring|landline|hotline|helpline|tfn)\b|☎|📞)"
    r"[^\n]{0,24}$",
    re.IGNORECASE,
)
_PHONE_KEYS = ("phone", "tel", "mobile", "cell", "fax", "msisdn", "whatsapp", "sms")
_DIGIT = re.compile(r"[0-9]")
_PHONE_WINDOW = 2048
"""Phone numbers are read this many characters at a time (up to twice as many to reach a cut
that splits no number): the matcher is slow per candidate, and reading window by window lets a
deadline stop it, gives each window a fresh try budget and bounds the text it copies."""
_PHONE_OVERLAP = 512
"""A window cut where no gap allows is read this far past its end, so a number across the
cut (at most a few hundred characters, extension included) is read whole."""
# A gap a number cannot span: 64 characters without a digit (a number holds at most 4
# punctuation characters between digit groups and a short extension word); a cut in its middle
# leaves 32 on each side, more than any run of leading punctuation or trailing context.
_GAP = re.compile(r"[^0-9]{64}")
_SPACE_RUN = re.compile(r"\s+")


def _phone_windows(text: str) -> Iterator[tuple[int, int, int]]:
    """``(start, accept_end, scan_end)``: read ``text[start:scan_end]``, keep the numbers that
    start before ``accept_end``; the next window starts at ``accept_end``."""
    n, start = len(text), 0
    while start < n:
        if n - start <= 2 * _PHONE_WINDOW:
            yield start, n, n
            return
        gap = _GAP.search(text, start + _PHONE_WINDOW, start + 2 * _PHONE_WINDOW)
        if gap is not None:
            cut = gap.start() + 32
            yield start, cut, cut
        else:  # digit-dense text: cut after a space where one is near, read on past the cut
            cut = start + 2 * _PHONE_WINDOW
            back = text.rfind(" ", cut - 256, cut)
            cut = back + 1 if back > start else cut
            yield start, cut, min(n, cut + _PHONE_OVERLAP)
        start = cut


def _phones(text: str, region: str, key: str) -> Iterator[Span]:
    if sum(1 for _ in islice(_DIGIT.finditer(text), 7)) < 7:
        return
    leniency = phonenumbers.Leniency.STRICT_GROUPING
    keyed = any(k in key for k in _PHONE_KEYS)
    floor = 0  # where the last number found ends: a window read past its cut found it already
    for start, accept, scan in _phone_windows(text):
        spend(scan - start)
        window = text[start:scan]
        # The library's own budget (max_tries, 65,535 by default) silently stops reading a text
        # once that many candidates failed: past it a real number went unread. Each window is
        # small, and the deadline bounds the whole.
        for m in phonenumbers.PhoneNumberMatcher(window, region, leniency, max_tries=sys.maxsize):
            s, e = start + m.start, start + m.end
            if s >= accept:
                break
            if s < floor:
                continue
            floor = e
            if m.raw_string.isdigit() and not keyed:
                spend(40)
                if not _PHONE_WORDS.search(text, max(0, s - 40), s):
                    continue
            yield s, e


# Most exact first: an overlap goes to the rule that checks most (a card's Luhn digit, an SSN's
# rules) before the lenient phone reading.
_FINDERS: dict[str, Finder] = {
    "email": _emails,
    "credit-card": _cards,
    "ssn": _ssns,
    "ipv6": _ipv6s,
    "ipv4": _ipv4s,
    "phone": _phones,
}


def _merge(
    kept: list[tuple[int, int, str]], new: list[Span], rule: str
) -> list[tuple[int, int, str]]:
    """``kept`` (sorted, not overlapping) with every span of ``new`` (sorted) that overlaps
    none of them, in one pass: an overlap goes to the rule that found it first."""
    spend(len(kept) + len(new))
    added: list[tuple[int, int, str]] = []
    i = 0
    for s, e in new:
        while i < len(kept) and kept[i][1] <= s:
            i += 1
        if i < len(kept) and kept[i][0] < e:
            continue
        if added and added[-1][1] > s:
            continue
        added.append((s, e, rule))
    if not added:
        return kept
    return sorted(kept + added) if kept else added


def _may_hold(text: str) -> bool:
    """Whether ASCII text without an ``@`` has the digits a rule needs: 4 for an IPv4 address
    (an SSN 9, a phone 7, a card 13), or one beside two colons for an IPv6 address (``::1``)."""
    digits = sum(1 for _ in islice(_DIGIT.finditer(text), 4))
    return digits == 4 or (digits > 0 and text.count(":") >= 2)


def find(
    text: str, rules: Iterable[str] = RULES, *, region: str = "US", key: str = ""
) -> list[tuple[str, int, int]]:
    """Every finding in ``text`` as ``(rule, start, end)``, offsets in ``text`` as given.

    Args:
        text: The string to read (normalised first; offsets map back to it).
        rules: Which kinds to look for.
        region: The country whose national phone formats are read (ISO 3166 code).
        key: The key the text sits under (``phone``, ``ssn``, ``version``...), as context.
    """
    if text.isascii() and "@" not in text and not _may_hold(text) and not escaped(text):
        return []  # (escaped: &commat; and [at] stand for an @) most keys and words: one scan
    norm = unescape(normalise(text))
    chosen = set(rules)
    key = key.lower()
    kept: list[tuple[int, int, str]] = []
    for rule, finder in _FINDERS.items():
        if rule in chosen:
            kept = _merge(kept, list(finder(norm.text, region, key)), rule)
    found = [(rule, *norm.span(s, e)) for s, e, rule in kept]
    return found + _smuggled(text, found, chosen, region, key) if not text.isascii() else found


def _smuggled(
    text: str, found: list[tuple[str, int, int]], rules: set[str], region: str, key: str
) -> list[tuple[str, int, int]]:
    """Findings in ``text`` with what it hides in tag characters read where it stands (drawn as
    nothing, read as the ASCII they mirror: a card or an address carried out unseen, in one run
    or split between runs, invisible characters or visible text), where no finding of the text
    as drawn is. Each tag character is one ASCII one, so the offsets are ``text``'s."""
    if not TAG_RUN.search(text):
        return []
    spans = sorted((s, e) for _, s, e in found)  # as drawn: in order, none overlapping
    starts = [s for s, _ in spans]
    out: list[tuple[str, int, int]] = []
    for rule, s, e in find(text.translate(TAG_ASCII), rules, region=region, key=key):
        i = bisect.bisect_left(starts, e)
        if not (i and spans[i - 1][1] > s):
            out.append((rule, s, e))
    return out


def mask_text(text: str, rules: Iterable[str] = RULES, *, region: str = "US", key: str = "") -> str:
    """``text`` with every finding replaced by its mask (``[EMAIL]``, ``[CARD]``...)."""
    found = find(text, rules, region=region, key=key)
    return replace_spans(text, ((s, e, MASKS[rule]) for rule, s, e in found))
