"""The catalogue of guardrails, one module per family; none imports Temporal."""

from .admission import AdmissionRegistry, admit, admit_many, agents
from .moderation import Classification, moderation
from .pii import pii
from .principals import AuthGuardrail, principals
from .schema import schema
from .size import size_cap
from .validation import ValidationContext, ValidationGuardrail, validator

__all__ = [
    "AdmissionRegistry",
    "AuthGuardrail",
    "Classification",
    "ValidationContext",
    "ValidationGuardrail",
    "admit",
    "admit_many",
    "agents",
    "moderation",
    "pii",
    "principals",
    "schema",
    "size_cap",
    "validator",
]
