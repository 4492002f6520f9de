"""Validation guardrails: is the agent's final answer *right*, by your acceptance criteria?

A validation guardrail judges the agent's answer at placement ``final-answer``, while the loop
still holds the conversation: a refusal goes back to the model as a correction carrying the
reason, and the model answers again (the loop bounds the corrections). Write the reason for the
model: which field is wrong, what the records say, what a right answer looks like.

The checks usually compare the answer with what the tools returned in the session. The loop
puts the last few of those records in ``subject.session.results`` (:class:`ToolRecord`);
:class:`ValidationContext` reads them. Two ways to write one::

    @validator(name="refund-matches-records")
    def refund_matches(answer, ctx):
        for rec in ctx.results("refund_card"):
            if rec.result["amount"] != ctx.data["refund_amount"]:
                return f"the answer says {ctx.data['refund_amount']}, refund_card returned ..."
        return True

    class RefundMatches(ValidationGuardrail):
        async def validate(self, answer, ctx): ...

Register the object on the worker (``DuraguardPlugin(guardrails=[refund_matches])``) and name
it in workflow code; only its name crosses.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .._types import Detection, Subject, ToolRecord, Verdict
from ..guardrail import DEFAULT_TIMEOUT, Guardrail, call_user


def _parsed(answer: Any) -> Any:
    if isinstance(answer, str):
        try:
            return json.loads(answer)
        except ValueError:
            return answer
    if isinstance(answer, BaseModel):
        return answer.model_dump(mode="json")
    return answer


@dataclass(frozen=True)
class ValidationContext:
    """What a validator may read besides the answer: the session's tool results, who asked."""

    subject: Subject
    records: tuple[ToolRecord, ...] = field(default=())

    @classmethod
    def of(cls, subject: Subject) -> ValidationContext:
        return cls(subject=subject, records=subject.session.results if subject.session else ())

    @property
    def data(self) -> Any:
        """The answer as data: JSON text parsed, a pydantic model dumped, anything else as is."""
        return _parsed(self.subject.value)

    @property
    def principal(self) -> str | None:
        return self.subject.context.principal

    def results(self, tool: str | None = None) -> list[ToolRecord]:
        """The successful results of ``tool`` (every tool when ``None``), oldest first."""
        return [r for r in self.records if r.ok and (tool is None or r.tool == tool)]


Judgment = Verdict | bool | str | None
ValidatorFn = Callable[[Any, ValidationContext], Judgment | Awaitable[Judgment]]


def _to_verdict(out: Any, name: str) -> Verdict:
    if isinstance(out, Verdict):
        return out
    if out is None or out is True:
        return Verdict.allow()
    if out is False:
        return Verdict.deny(
            f"the answer does not meet {name!r}; check it against the tool results, answer again",
            check=name,
            detections=(Detection(rule=f"{name}.invalid"),),
        )
    if isinstance(out, str):
        return Verdict.deny(out, check=name, detections=(Detection(rule=f"{name}.invalid"),))
    raise TypeError(
        f"validator {name!r} returned {type(out).__name__}; return True/None, False, "
        "a correction (str) or a Verdict"
    )


class ValidationGuardrail(Guardrail):
    """Base of a validation guardrail: implement :meth:`validate`.

    ``validate`` returns ``True``/``None`` to accept, a correction (``str``) or ``False`` to
    refuse, or a full :class:`~duraguard.Verdict`.
    """

    placements = frozenset({"final-answer"})

    @abstractmethod
    async def validate(self, answer: Any, ctx: ValidationContext) -> Judgment:
        """Judge ``answer``; ``ctx`` holds the session's tool results and the principal."""

    async def check(self, subject: Subject) -> Verdict:
        ctx = ValidationContext.of(subject)
        return _to_verdict(await self.validate(subject.value, ctx), self.name)


class FunctionValidator(ValidationGuardrail):
    """A validation guardrail made from ``fn(answer, ctx)``."""

    def __init__(self, fn: ValidatorFn, *, name: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.fn = fn
        self.name = name
        self.timeout = timeout

    async def validate(self, answer: Any, ctx: ValidationContext) -> Judgment:
        out: Judgment = await call_user(self.fn, answer, ctx, label=f"validator {self.name!r}")
        return out


def validator(
    fn: ValidatorFn | None = None, *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> Any:
    """Turn ``fn(answer, ctx)`` into a validation guardrail (a decorator, with or without args).

    The function returns ``True``/``None`` to accept the answer, a correction for the model
    (``str``) or ``False`` to refuse it, or a :class:`~duraguard.Verdict`. It may be async.
    """

    def wrap(f: ValidatorFn) -> FunctionValidator:
        chosen = name or getattr(f, "__name__", "validator").replace("_", "-")
        return FunctionValidator(f, name=chosen, timeout=timeout)

    return wrap(fn) if fn is not None else wrap
