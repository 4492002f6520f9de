"""The catalogue of guardrails, one module per family; none imports Temporal."""

from . import native as _native  # noqa: F401  (registers the kind: adapters record with it)
from .address import address
from .admission import AdmissionRegistry, agents
from .moderation import Classification, moderation
from .pii import pii
from .policy import policy
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
    "address",
    "agents",
    "moderation",
    "pii",
    "policy",
    "principals",
    "schema",
    "size_cap",
    "validator",
]
