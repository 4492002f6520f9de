"""``pii``: email addresses, phone numbers, Luhn-valid card numbers, IPv4 and IPv6 addresses and
US social security numbers, found in any key, string or number of a value and masked by default.

Every key and every leaf is read, at every depth; a number is read as its digits (a card
written as the JSON float ``4111111111111111.0`` or ``-4.111111111111111e15`` is a card). A
masked key is renamed with its mask (``[EMAIL KEY]``, then ``[EMAIL KEY] (2)`` where that name
is taken), so the masked value is valid JSON and keeps every member; a masked number becomes a
string.

Every string is read normalised first (NFKC, zero-width and other invisible characters removed,
digits in ASCII: see :func:`duraguard.checks._text.normalise`), so a card number split by
zero-width joiners or written in full-width digits is found. Escapes are then read as what they
stand for (percent-encoding as a URL's query carries a value to another host, HTML character
references, JSON escapes left in a text, ``ana [at] example (dot) com``, ``ana at example dot
com``, ``ana @ example.com``, digits spaced one by one; escaped twice too: see
:func:`duraguard.checks._escapes.unescape`). Text hidden in Unicode tag characters (drawn as
nothing, read back as the ASCII they mirror) is read too, as the text it hides. The mask is
applied to the span of the *original* string, the escaped or hidden form, and each finding
carries that span (``Detection.start`` / ``end``).

Tuned for few false positives: a card must pass Luhn *and* start like a real card; a phone must
be a valid number for its country (the ``phonenumbers`` library, national formats read for the
``region`` setting), and a bare run of digits counts as a phone only where the words before it or
its key say so; an SSN must be a number the SSA could issue (not a published sample); an IP
written after ``version``, ``v``, ``release``... is a version. Logs name the kinds found, never
the content, at the level the ``log_level`` setting names.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Literal

import phonenumbers
from pydantic import field_validator

from .._types import Action, Detection, Subject, Verdict
from ..guardrail import Guardrail, GuardrailSpec, Kind, Resources, Settings, register_kind
from ._pii_find import MASKS as MASKS
from ._pii_find import RULES as RULES
from ._pii_find import SAMPLE_SSNS as SAMPLE_SSNS
from ._pii_find import Rule as Rule
from ._pii_find import find as find
from ._pii_find import luhn_ok as luhn_ok
from ._pii_find import mask_text as mask_text
from ._pii_find import ssn_ok as ssn_ok
from ._pii_split import SplitCards
from ._text import (
    OFFLOAD_CHARS,
    Piece,
    context_key,
    pieces,
    pointer,
    replace_spans,
    text_size,
)

log = logging.getLogger("duraguard")

LogLevel = Literal["off", "debug", "info", "warning", "error"]
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


KEY_MASKS = {rule: f"{mask[:-1]} KEY]" for rule, mask in MASKS.items()}
"""What a finding in a key is masked with: ``[EMAIL KEY]``. Named as a key (its words say which
thing, not where a call goes), so a masked key never reads as a new address field of the call
(``duraguard._addresses``), which the engine would refuse as a change of where it goes."""
ADDRESS_KINDS = frozenset({"email", "phone", "ipv4", "ipv6"})
"""Kinds that, found in an argument addressing a call (:attr:`Subject.addresses`), are where the
call goes rather than personal data it carries: a masking ``pii`` leaves them to the destination
checks."""


def finding(rule: str, path: str, start: int, end: int, *, key: bool = False) -> Detection:
    """A detection located by JSON Pointer and by character offsets within that string (or
    within the key of the member at ``path``, marked ``detail="key"``)."""
    return Detection(rule=rule, path=path, start=start, end=end, detail="key" if key else None)


class PiiSettings(Settings):
    """What ``pii(...)`` was given: the rules, what a finding does, the phone region."""

    rules: tuple[Rule, ...] = RULES
    action: Action = "mask"
    region: str = "US"
    """The country whose national phone formats are read, e.g. ``US``, ``GB``, ``IL``."""
    log_level: LogLevel = "debug"
    """How a finding is logged (kinds and where, never the content); ``off`` logs nothing."""

    @field_validator("rules", mode="before")
    @classmethod
    def _known(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        for r in v:
            if r not in RULES:
                raise ValueError(f"unknown pii rule {r!r}; known: {', '.join(RULES)}")
        return v

    @field_validator("region", mode="before")
    @classmethod
    def _region(cls, v: Any) -> Any:
        if not isinstance(v, str) or v.upper() not in phonenumbers.SUPPORTED_REGIONS:
            raise ValueError(
                f"unknown phone region {v!r}; use an ISO 3166 country code such as US, GB, DE, "
                "IL, IN, BR (the regions the phonenumbers library knows)"
            )
        return v.upper()


class PiiGuardrail(Guardrail):
    """Finds personal data in every string of a value; masks it, or refuses, as set."""

    def __init__(self, settings: PiiSettings) -> None:
        self.settings = settings

    def _find(self, piece: Piece) -> list[tuple[str, int, int]]:
        s = self.settings
        return find(piece.text, s.rules, region=s.region, key=context_key(piece))

    async def check(self, subject: Subject) -> Verdict:
        if text_size(subject.value, OFFLOAD_CHARS) >= OFFLOAD_CHARS:
            return await asyncio.to_thread(self._judge, subject)  # a big value: off the loop
        return self._judge(subject)

    def _judge(self, subject: Subject) -> Verdict:
        found: list[Detection] = []
        masked: dict[tuple[Any, ...], str] = {}
        keys: dict[tuple[Any, ...], str] = {}
        # A mask leaves where the call goes alone: an address found in an argument that
        # addresses the call (its recipient, its host) is judged as a destination (by the
        # policy, by address()), not masked as data it carries; a card number or an SSN written
        # into an address is data, and masking it there refuses the call (the engine's rule).
        # observe, deny and halt report every finding, addresses too. A key never addresses.
        masks = self.settings.action in ("mask", "rewrite")
        addresses = set(subject.addresses) if masks else set()
        split = SplitCards() if "credit-card" in self.settings.rules else None
        for piece in pieces(subject.value):
            if split is not None:
                split.feed(piece)
            spans = self._find(piece)
            if not spans:
                continue
            where = pointer(piece.path)
            if addresses and not piece.key and where in addresses:
                spans = [x for x in spans if x[0] not in ADDRESS_KINDS]
                if not spans:
                    continue
            found.extend(finding(f"pii.{r}", where, s, e, key=piece.key) for r, s, e in spans)
            names = KEY_MASKS if piece.key else MASKS
            hidden = replace_spans(piece.text, [(s, e, names[r]) for r, s, e in spans])
            (keys if piece.key else masked)[piece.path] = hidden
        for run in split.runs() if split is not None else ():
            # A card split across neighbouring leaves: each leaf that holds a part is masked
            # whole, and each is a finding of its own (the parts are where the number is).
            for part in run:
                found.append(finding("pii.credit-card", pointer(part.path), 0, len(part.text)))
                masked[part.path] = MASKS["credit-card"]
        if not found:
            return Verdict.allow()
        kinds = sorted({d.rule.removeprefix("pii.") for d in found})
        where = f"tool {subject.tool!r}" if subject.tool else subject.placement
        action = self.settings.action
        if self.settings.log_level != "off":
            log.log(
                _LEVELS[self.settings.log_level],
                "duraguard: pii found in %s (%s): %s",
                where,
                subject.placement,
                ", ".join(kinds),
            )
        reason = f"{where} carries personal data ({', '.join(kinds)})"
        if action in ("mask", "rewrite"):
            return Verdict(
                action=action,
                detections=tuple(found),
                reason=reason + "; masked",
                payload=_rebuild(subject.value, masked, keys),
                check="pii",
            )
        return Verdict(
            action=action,
            detections=tuple(found),
            reason=reason + ("; remove it and call again" if action == "deny" else ""),
            check="pii",
        )


def _rebuild(
    value: Any,
    masked: dict[tuple[Any, ...], str],
    keys: dict[tuple[Any, ...], str],
    path: tuple[Any, ...] = (),
) -> Any:
    """``value`` with the leaves at ``masked``'s paths replaced by their masked text and the
    keys at ``keys``' paths renamed to theirs (see :func:`_renamed`)."""
    if isinstance(value, dict):
        names = _renamed(value, keys, path)
        return {names.get(k, k): _rebuild(v, masked, keys, (*path, k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rebuild(v, masked, keys, (*path, i)) for i, v in enumerate(value)]
    return masked.get(path, value)


def _renamed(
    obj: dict[str, Any], keys: dict[tuple[Any, ...], str], path: tuple[Any, ...]
) -> dict[str, str]:
    """New names for the masked keys of ``obj``: the masked text, or where another member
    already has that name, the masked text with `` (2)``, `` (3)``... so no member is lost.
    Clean keys keep their names."""
    wanted = {k: keys[(*path, k)] for k in obj if (*path, k) in keys}
    if not wanted:
        return {}
    taken = {k for k in obj if k not in wanted}
    counters: dict[str, int] = {}
    names: dict[str, str] = {}
    for k, name in wanted.items():
        chosen = name
        while chosen in taken:
            counters[name] = counters.get(name, 1) + 1
            chosen = f"{name} ({counters[name]})"
        taken.add(chosen)
        names[k] = chosen
    return names


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
    region: str = "US",
    log_level: LogLevel = "debug",
    name: str | None = None,
    placements: Iterable[Any] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Find personal data: ``email``, ``phone``, ``credit-card`` (Luhn), ``ipv4``, ``ipv6``, ``ssn``.

    Masks by default (the request minus the identifier is usually still the request); set
    ``action`` to ``deny`` or ``halt`` for data that must not travel, ``observe`` to measure.
    A mask never changes where a call goes: the address in an argument that addresses the call
    (``to``, ``phone``, ``host``: :attr:`~duraguard.Subject.addresses`) is left to the
    destination checks, and a card number or SSN written into one refuses the call.

    Args:
        region: The country whose national phone formats are read (``(415) 555-0132`` is a
            phone for ``US``, ``09-7625400`` for ``IL``); numbers with ``+`` are read anywhere.
        log_level: ``debug`` (default), ``info``, ``warning``, ``error`` or ``off``: the level
            of the one log line per finding pass (kinds and where, never the content).
    """
    return KIND.spec(
        name=name,
        placements=placements,
        timeout=timeout,
        rules=tuple(rules),
        action=action,
        region=region,
        log_level=log_level,
    )
