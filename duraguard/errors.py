"""Errors duraguard raises, in three kinds that are never mixed.

::

    DuraguardError                      base of everything duraguard raises on purpose
    ├── GuardrailViolation              a policy outcome; an ApplicationError, non-retryable,
    │   │                               registered as a workflow failure type by the plugin
    │   ├── GuardrailHalt               a halt outside an agent loop (``check``, ``guarded_call``)
    │   ├── RunStopped                  a guardrail ended a run a framework drives (adapters)
    │   ├── EditsRefused                a person's edited arguments failed their re-check
    │   └── GuardrailFailed             a guardrail with ``on_error="fail"`` raised; its error inside
    ├── StepError                       a step of duraguard's failed (an ApplicationError with a
    │   │                               stable type; the workflow reads it from the activity error)
    │   ├── BadToolArguments            the tool cannot take these arguments (not retried)
    │   ├── ResultNotRecorded           the tool ran, its result cannot be recorded (not retried:
    │   │                               running it again would repeat its effect)
    │   ├── McpToolError                an MCP server answered a call with isError (not retried)
    │   ├── UnknownModel                no model provider of that name on the worker (not retried)
    │   ├── UnknownTool                 a loop offers its model a tool no worker has (not retried)
    │   ├── ModelRequestRefused         a model request retrying cannot fix (bad key, bad request)
    │   ├── ModelUnavailable            a transient provider failure (retried by Temporal)
    │   └── MissingSessionKey           carrying a session needs the plugin's session key
    ├── ConfigurationError              a developer mistake, raised at construction (a ValueError)
    │   ├── UnknownGuardrail            no guardrail of that kind or name is registered
    │   └── RuleSheetError              a rule sheet that cannot be read, with the line and the fix
    └── CodecError (duraguard.codec)    a payload that cannot be decrypted (unknown key id, tampered)

A transient failure (a classifier that timed out, a network error) is left alone so that
Temporal retries the activity; only when a guardrail cannot decide does it become a refusal.
"""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ApplicationError

from ._types import StopReason


class DuraguardError(Exception):
    """Base of every error duraguard raises on purpose."""


class GuardrailViolation(ApplicationError, DuraguardError):
    """A guardrail stopped the run. Non-retryable: the decision is already recorded."""

    type_name = "duraguard.GuardrailViolation"

    def __init__(self, message: str, *details: Any, by: str | None = None) -> None:
        super().__init__(message, *details, type=self.type_name, non_retryable=True)
        self.by = by


class GuardrailHalt(GuardrailViolation):
    """A ``halt`` verdict where there is no agent loop to end."""

    type_name = "duraguard.GuardrailHalt"


class RunStopped(GuardrailViolation):
    """A guardrail ended an agent run that a framework drives (the OpenAI Agents SDK or
    Pydantic AI adapters turn it into their run's result: stop reason and who stopped it)."""

    type_name = "duraguard.RunStopped"

    def __init__(self, message: str, *, stop_reason: StopReason, by: str | None) -> None:
        super().__init__(message, by=by)
        self.stop_reason: StopReason = stop_reason
        self.note = message


class EditsRefused(GuardrailViolation):
    """A person's edits to an approved call were refused when checked again."""

    type_name = "duraguard.EditsRefused"


class GuardrailFailed(GuardrailViolation):
    """A guardrail set to ``on_error="fail"`` raised; the gated call fails with that error."""

    type_name = "duraguard.GuardrailFailed"


class StepError(ApplicationError, DuraguardError):
    """A failure of one of duraguard's steps, with a stable ``type`` the workflow can match."""

    type_name = "duraguard.StepError"
    retryable = False

    def __init__(self, message: str, *details: Any, **kw: Any) -> None:
        kw.setdefault("non_retryable", not self.retryable)
        super().__init__(message, *details, type=self.type_name, **kw)


class BadToolArguments(StepError):
    """The tool cannot take these arguments (the model, or a person's edits, got them wrong)."""

    type_name = "duraguard.BadToolArguments"


class ResultNotRecorded(StepError):
    """The tool ran, but its result cannot be recorded (not JSON, too large): not retried."""

    type_name = "duraguard.ResultNotRecorded"


class McpToolError(StepError):
    """An MCP server answered the call with ``isError``: the model reads why."""

    type_name = "duraguard.McpToolError"


class UnknownModel(StepError):
    """No model provider of that name is registered on the worker."""

    type_name = "duraguard.UnknownModel"


class UnknownTool(StepError):
    """A loop's ``tools=[...]`` names a tool the worker does not have (a typo, a tool left out
    of ``DuraguardPlugin(tools=[...])``): the first model step refuses, naming it."""

    type_name = "duraguard.UnknownTool"


class ModelRequestRefused(StepError):
    """A model request that retrying cannot fix: a bad key, a bad request, an unknown script."""

    type_name = "duraguard.ModelRequestRefused"


class ModelUnavailable(StepError):
    """A transient model provider failure: Temporal retries it."""

    type_name = "duraguard.ModelUnavailable"
    retryable = True


class MissingSessionKey(StepError):
    """Carrying a session across continue-as-new needs the plugin's session key."""

    type_name = "duraguard.MissingSessionKey"


class ConfigurationError(ValueError, DuraguardError):
    """A developer mistake, caught when the thing is built: the message says the fix."""


class UnknownGuardrail(ConfigurationError):
    """No guardrail of that kind or name is registered."""


class RuleSheetError(ConfigurationError):
    """A rule sheet that cannot be loaded."""


FAILURE_TYPES: tuple[type[BaseException], ...] = (GuardrailViolation, ConfigurationError)
"""What the plugin registers as workflow failure types: a refusal ends the run, never
retries the workflow task forever."""
