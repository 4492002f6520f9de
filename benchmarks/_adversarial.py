"""Adversarial inputs for the content checks: repeated near-matches for every rule, at any size.

Each input is a unit repeated until the value's JSON reaches the size asked for: something
that starts like what a rule looks for and is not (or is, many times over: a value full of real
findings). ``benchmarks/content_checks.py`` times every check on each at 1 KiB, 64 KiB and
1 MiB; ``tests/checks/test_bounded_work.py`` counts the work done at two sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from duraguard import moderation, pii, schema
from duraguard.checks import address, size_cap
from duraguard.guardrail import GuardrailSpec


def repeated(unit: str, size: int) -> str:
    """``unit`` repeated to ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def _text(unit: str) -> Callable[[int], Any]:
    return lambda size: {"text": repeated(unit, size)}


def _wide(size: int) -> Any:
    # Every key and value with the same four digits or more: each is read in full (a text with
    # fewer has no finding to look for, and costs pii one scan).
    return {f"field{i:06d}": f"v{i:06d}" for i in range(max(1, size // 22))}


def _deep(size: int) -> Any:
    # Chains 100 lists deep (under the depth a JSON reader accepts), as many as fit.
    chain: Any = "x"
    for _ in range(100):
        chain = [chain]
    return {"chains": [chain] * max(1, size // 206)}


def _hosts(size: int) -> Any:
    return {"hosts": [f"h{i}.example.org" for i in range(max(1, size // 18))]}


def _idn_hosts(size: int) -> Any:
    # Hosts of distinct CJK labels (no cache helps): punycode costs the square of a label.
    def label(i: int) -> str:
        return "".join(chr(0x4E00 + (i * 7919 + j * 104729) % 20000) for j in range(40))

    return {"text": " ".join(f"http://{label(i)}.example/" for i in range(max(1, size // 150)))}


def _objects(size: int) -> Any:
    return [{"sku": f"A-{i}", "n": i} for i in range(max(1, size // 24))]


def _digit_groups(size: int) -> Any:
    return ["4111", "1111", "1111", "111"] * max(1, size // 24)


def _numbers(size: int) -> Any:
    return list(range(max(1, size // 7)))


def _keys(size: int) -> Any:
    return {f"k{i}": i for i in range(max(1, size // 12))}


@dataclass(frozen=True)
class Input:
    """One adversarial input: what it is, how to make it, and the checks it aims at."""

    name: str
    what: str
    make: Callable[[int], Any]
    checks: tuple[str, ...]


INPUTS: tuple[Input, ...] = (
    Input("emails", "real addresses, ana.lopes@example.com ...", _text("ana.lopes@example.com "), ("pii",)),
    Input("almost-emails", "addresses with no top-level label", _text("ana.lopes@example "), ("pii",)),
    Input("email-local-runs", "a/a/a/...@: local parts starting everywhere", _text("a/a/a/a/a/a/a/a/a@"), ("pii",)),
    Input("digit-runs", "9-digit numbers (bare SSN or phone candidates)", _text("123456789 "), ("pii",)),
    Input("almost-phones", "(415) 555-013: one digit short", _text("(415) 555-013 "), ("pii",)),
    Input("phones", "real numbers after a phone word", _text("call (415) 555-0132 "), ("pii",)),
    Input("almost-cards", "15 digits in card groups", _text("4111 1111 1111 111 "), ("pii",)),
    Input("almost-ssns", "123-45-678: one digit short", _text("123-45-678 "), ("pii",)),
    Input("ssns-after-words", "ssn: and a bare number", _text("ssn: 123456789 "), ("pii",)),
    Input("ipv4-list", "public IPv4 addresses", _text("8.8.4.4 "), ("pii", "address")),
    Input("almost-ips", "1.2.3. with no last part", _text("1.2.3. "), ("pii", "address")),
    Input("colon-runs", "1:2:1:2: (IPv6 candidates)", _text("1:2:"), ("pii",)),
    Input("ipv6-list", "fe80::1 ...", _text("fe80::1 "), ("pii",)),
    Input("long-word", "one unbroken word", _text("a"), ("pii", "address", "moderation")),
    Input("invisible", "digits split by zero-width spaces and marks", _text("4\u200b1\u0301"), ("pii", "address", "moderation")),
    Input("tag-runs", "tag characters between visible ones: each run read apart", _text("\U000e0034\U000e0031a"), ("pii", "address", "moderation")),
    Input("mark-piles", "thousands of combining marks on one letter", _text("a" + "\u0301\u0316" * 2048 + " "), ("pii", "address", "moderation")),
    Input("escapes", "percent, HTML and JSON escapes, escaped twice too", _text("%41%2540&#52;&#x31;&commat;\\u0034 "), ("pii", "moderation")),
    Input("spelled", "ana at x dot near misses, digits spaced one by one", _text("ana at x dot y at 1 2 3 4 5 6 @ "), ("pii",)),
    Input("split-groups", "card groups in a list, one digit short each time", _digit_groups, ("pii",)),
    Input("bracket-words", "[at] and (dot) near misses after blank runs", _text("      [ at ]x(dot (at) "), ("pii",)),
    Input("urls", "public URLs in prose", _text("see https://example.org/a "), ("address",)),
    Input("url-chain", "http://a.b/http://a.b/... with no space", _text("http://a.b/"), ("address",)),
    Input("almost-urls", "schemes with no host: http:// a:// ...", _text("http:// a:// "), ("address",)),
    Input("host-list", "public hosts under a host-like key", _hosts, ("address",)),
    Input("idn-hosts", "URLs with long international labels", _idn_hosts, ("address",)),
    Input("wide-json", "an object of many small members", _wide, ("pii", "address", "size", "schema", "moderation")),
    Input("deep-json", "lists nested 100 deep, many times", _deep, ("pii", "address", "size")),
    Input("unique-objects", "uniqueItems over distinct objects", _objects, ("schema",)),
    Input("unevaluated-items", "unevaluatedItems over a long array", _numbers, ("schema",)),
    Input("pattern-keys", "patternProperties over many keys", _keys, ("schema",)),
)  # fmt: skip
"""Every input, in the order the benchmark prints them."""

SCHEMAS: dict[str, Any] = {
    "wide-json": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 64}},
    "unique-objects": {"type": "array", "uniqueItems": True, "items": {"type": "object"}},
    "unevaluated-items": {
        "type": "array",
        "prefixItems": [{"type": "integer"}],
        "contains": {"type": "integer"},
        "unevaluatedItems": {"type": "integer"},
    },
    "pattern-keys": {
        "type": "object",
        "patternProperties": {"^k[0-9]+$": {"type": "integer", "minimum": 0}},
        "additionalProperties": False,
    },
}
"""The tool schema each input is judged against by ``schema``."""


def spec(check: str) -> GuardrailSpec:
    """The guardrail a benchmark or test runs as ``check``; no timeout binds (1 hour)."""
    made: dict[str, Callable[[], GuardrailSpec]] = {
        "pii": lambda: pii(timeout=3600),
        "address": lambda: address(timeout=3600),
        "size": lambda: size_cap(max_chars=1 << 30, timeout=3600),
        "schema": lambda: schema(timeout=3600),
        "moderation": lambda: moderation(timeout=3600),
    }
    return made[check]()
