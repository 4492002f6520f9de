"""``pii``: email addresses, E.164 phone numbers, Luhn-valid card numbers, IPv4 addresses and
US social security numbers, found in any string of a value and masked by default.

Tuned for few false positives: a card must pass Luhn *and* start like a real card; a 13-digit
millisecond timestamp, a 16-digit number that fails Luhn, a version string such as ``1.2.3.4.5``
or ``v10.0.0.1`` and a date are not PII. Logs name the kinds found, never the content.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import field_validator

from .._types import REFUSING, Action, Detection, Subject, Verdict
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from ._text import leaves, pointer, transform

log = logging.getLogger("duraguard")

Rule = Literal["email", "phone", "credit-card", "ipv4", "ssn"]
RULES: tuple[Rule, ...] = ("email", "phone", "credit-card", "ipv4", "ssn")

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# E.164: a plus, a country code not starting with 0, at most 15 digits; single spaces, dots or
# dashes between groups, and an area code in parentheses ("+1 (415) 555-2671"), are tolerated
# because people write them.
_PHONE = re.compile(r"(?<![\w+])\+[1-9](?:(?:[ .\-]|[ .\-]?\(|\)[ .\-]?)?\d){6,14}(?![\d])")
_CARD = re.compile(r"(?<![\d.\-])(?:\d[ -]?){12,18}\d(?!\d|\.\d)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_SSN = re.compile(r"(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])")

MASKS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "credit-card": "[CARD]",
    "ipv4": "[IPV4]",
    "ssn": "[SSN]",
}


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
    p2, p4, p6 = int(d[:2]), int(d[:4]), int(d[:6])
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16  # Mastercard
    if p2 in (34, 37):
        return n == 15  # American Express
    if (
        d.startswith("6011")
        or d.startswith("65")
        or 644 <= int(d[:3]) <= 649
        or 622126 <= p6 <= 622925
    ):
        return 16 <= n <= 19  # Discover
    if 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # JCB
    if p2 in (36, 38, 39) or 300 <= int(d[:3]) <= 305:
        return 14 <= n <= 19  # Diners Club
    if p2 == 62:
        return 16 <= n <= 19  # UnionPay
    if d[:2] in ("50", "56", "57", "58", "63", "67"):
        return 12 <= n <= 19  # Maestro
    return False


def _card(m: re.Match[str]) -> bool:
    digits = re.sub(r"[ -]", "", m.group(0))
    return 13 <= len(digits) <= 19 and _card_prefix_ok(digits) and luhn_ok(digits)


def _ipv4(m: re.Match[str]) -> bool:
    try:
        ipaddress.IPv4Address(m.group(0))
    except ValueError:
        return False
    start = m.start()
    before = m.string[max(0, start - 1) : start]
    return before.lower() != "v"  # "v10.0.0.1" is a version


def _ssn(m: re.Match[str]) -> bool:
    area, group, serial = m.group(1), m.group(2), m.group(3)
    return (
        area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )


def _phone(m: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", m.group(0))
    return 8 <= len(digits) <= 15


_FINDERS: dict[str, tuple[re.Pattern[str], Any]] = {
    "email": (_EMAIL, None),
    "phone": (_PHONE, _phone),
    "credit-card": (_CARD, _card),
    "ipv4": (_IPV4, _ipv4),
    "ssn": (_SSN, _ssn),
}


def find(text: str, rules: Iterable[str] = RULES) -> list[tuple[str, int, int]]:
    """Every match as ``(rule, start, end)``, overlapping matches resolved first-found."""
    spans: list[tuple[str, int, int]] = []
    for rule in rules:
        pattern, accept = _FINDERS[rule]
        for m in pattern.finditer(text):
            if accept is None or accept(m):
                if not any(s < m.end() and m.start() < e for _, s, e in spans):
                    spans.append((rule, m.start(), m.end()))
    spans.sort(key=lambda t: t[1])
    return spans


def mask_text(text: str, rules: Iterable[str] = RULES) -> str:
    out, last = [], 0
    for rule, s, e in find(text, rules):
        out.append(text[last:s])
        out.append(MASKS[rule])
        last = e
    out.append(text[last:])
    return "".join(out)


class PiiSettings(Settings):
    rules: tuple[Rule, ...] = RULES
    action: Action = "mask"

    @field_validator("rules", mode="before")
    @classmethod
    def _known(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        for r in v:
            if r not in RULES:
                raise ValueError(f"unknown pii rule {r!r}; known: {', '.join(RULES)}")
        return v


class PiiGuardrail(Guardrail):
    """Finds personal data in every string of a value; masks it, or refuses, as set."""

    def __init__(self, settings: PiiSettings) -> None:
        self.settings = settings

    def _scan(self, value: Any) -> list[Detection]:
        found: list[Detection] = []
        for path, leaf in leaves(value):
            if isinstance(leaf, bool) or leaf is None:
                continue
            text = leaf if isinstance(leaf, str) else str(leaf)
            for rule, _, _ in find(text, self.settings.rules):
                found.append(Detection(rule=f"pii.{rule}", path=pointer(path)))
        return found

    async def check(self, subject: Subject) -> Verdict:
        found = self._scan(subject.value)
        if not found:
            return Verdict.allow()
        kinds = sorted({d.rule.removeprefix("pii.") for d in found})
        where = f"tool {subject.tool!r}" if subject.tool else subject.placement
        action = self.settings.action
        # A refusal is an incident (ERROR); a mask or an observation is routine (WARNING).
        level = logging.ERROR if action in REFUSING else logging.WARNING
        log.log(
            level, "duraguard: pii found in %s (%s): %s", where, subject.placement, ", ".join(kinds)
        )
        reason = f"{where} carries personal data ({', '.join(kinds)})"
        if action in ("mask", "rewrite"):
            rules = self.settings.rules

            def redact(leaf: Any) -> Any:
                if isinstance(leaf, str):
                    return mask_text(leaf, rules)
                if (
                    isinstance(leaf, int | float)
                    and not isinstance(leaf, bool)
                    and find(str(leaf), rules)
                ):
                    return mask_text(str(leaf), rules)
                return leaf

            return Verdict(
                action=action,
                detections=tuple(found),
                reason=reason + "; masked",
                payload=transform(subject.value, redact),
                check="pii",
            )
        return Verdict(
            action=action,
            detections=tuple(found),
            reason=reason + ("; remove it and call again" if action == "deny" else ""),
            check="pii",
        )


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return PiiGuardrail(PiiSettings(**spec.settings))


KIND = register_kind(
    Kind(
        "pii",
        PiiSettings,
        _build,
        placements=(
            "pre-prompt",
            "post-model",
            "tool-args",
            "tool-result",
            "egress",
            "final-answer",
        ),
        reads_session=False,
    )
)


def pii(
    *,
    rules: Iterable[Rule] = RULES,
    action: Action = "mask",
    name: str | None = None,
    placements: Iterable[Any] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Find personal data: ``email``, ``phone`` (E.164), ``credit-card`` (Luhn), ``ipv4``, ``ssn``.

    Masks by default (the request minus the identifier is usually still the request); set
    ``action`` to ``deny`` or ``halt`` for data that must not travel, ``observe`` to measure.
    """
    return KIND.spec(
        name=name, placements=placements, timeout=timeout, rules=tuple(rules), action=action
    )
