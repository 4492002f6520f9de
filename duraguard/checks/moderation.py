"""``moderation``: text through a classifier registered by name on the worker.

duraguard ships no moderation model: what is acceptable belongs to the people running the agent.
A name that finds no classifier faults (deny, partial); it never reads as a clean bill of health.
The classifier is given the text normalised (see :func:`duraguard.checks._text.normalise`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import BaseModel, Field

from .._types import Action, Detection, Subject, Verdict
from ..errors import UnknownGuardrail
from ..guardrail import (
    Guardrail,
    GuardrailSpec,
    Kind,
    Resources,
    Settings,
    call_user,
    register_kind,
)
from ._escapes import unescape
from ._text import OFFLOAD_CHARS, normalise, text_of, text_size


class Classification(BaseModel):
    """What a classifier says about a text."""

    flagged: bool = False
    categories: list[str] = Field(default_factory=list)
    score: float | None = None
    """The highest category score in [0, 1], where the classifier gives one."""


Classifier = Callable[
    [str], "Classification | dict[str, Any] | Awaitable[Classification | dict[str, Any]]"
]


class ModerationSettings(Settings):
    """What ``moderation(...)`` was given: the classifier, its threshold, what a flag does."""

    classifier: str = "default"
    threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    action: Action = "halt"


class ModerationGuardrail(Guardrail):
    """Asks the named classifier; flags at or above the threshold decide."""

    remote = True

    def __init__(self, settings: ModerationSettings, resources: Resources) -> None:
        self.settings = settings
        classify = resources.classifiers.get(settings.classifier)
        if classify is None:
            known = ", ".join(sorted(resources.classifiers)) or "none"
            raise UnknownGuardrail(
                f"no moderation classifier named {settings.classifier!r} is registered on this "
                f"worker (registered: {known}); pass DuraguardPlugin(classifiers={{...}})"
            )
        self.classify = classify

    async def check(self, subject: Subject) -> Verdict:
        # The classifier reads the text normalised (NFKC, invisible characters removed), so a
        # word split by zero-width joiners or written in full-width letters reads as the word.
        if text_size(subject.value, OFFLOAD_CHARS) >= OFFLOAD_CHARS:  # a big value: a thread
            text = await asyncio.to_thread(_readable, subject.value)
        else:
            text = _readable(subject.value)
        if not text.strip():
            return Verdict.allow()
        # A sync classifier runs on the bounded pool of user-code threads, off the event loop.
        label = f"moderation classifier {self.settings.classifier!r}"
        raw = await call_user(self.classify, text, label=label)
        c = raw if isinstance(raw, Classification) else Classification.model_validate(raw)
        over = c.flagged and (c.score is None or c.score >= self.settings.threshold)
        if not over:
            return Verdict.allow(
                detections=tuple(
                    Detection(rule=f"moderation.{k}", detected=False, score=c.score)
                    for k in c.categories
                )
            )
        cats = ", ".join(c.categories) or "flagged"
        return Verdict(
            action=self.settings.action,
            reason=f"moderation classifier {self.settings.classifier!r} flagged this {subject.placement} value ({cats})",
            detections=tuple(
                Detection(rule=f"moderation.{k}", score=c.score)
                for k in (c.categories or ["flagged"])
            ),
            check="moderation",
        )


def _readable(value: Any) -> str:
    """What the classifier reads: every key and text, normalised, escapes read (``k%69ll``,
    ``k&#105;ll`` read ``kill``)."""
    return unescape(normalise(text_of(value))).text


def _build(spec: GuardrailSpec, resources: Resources) -> Guardrail:
    return ModerationGuardrail(ModerationSettings(**spec.settings), resources)


KIND = register_kind(
    Kind(
        "moderation",
        ModerationSettings,
        _build,
        placements=(
            "pre-prompt",
            "post-model",
            "tool-args",
            "tool-result",
            "egress",
            "final-answer",
        ),
        remote=True,
        reads_session=False,
    )
)


def moderation(
    *,
    classifier: str = "default",
    threshold: float = 0.8,
    action: Action = "halt",
    name: str | None = None,
    placements: Iterable[Any] | None = None,
    timeout: float = 10.0,
) -> GuardrailSpec:
    """Text through the classifier registered under ``classifier`` (default action ``halt``)."""
    return KIND.spec(
        name=name,
        placements=placements,
        timeout=timeout,
        classifier=classifier,
        threshold=threshold,
        action=action,
    )
