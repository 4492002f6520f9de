"""The catalogue of guardrails, one module per family; none imports Temporal."""

from .moderation import Classification, moderation
from .pii import pii
from .schema import schema

__all__ = ["Classification", "moderation", "pii", "schema"]
