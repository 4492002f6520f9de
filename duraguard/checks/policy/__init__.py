"""``policy``: the staged tool-call policy (tool kinds, admission, tool check, what was said)."""

from .catalogue import Catalogue, OrderRules, ToolInfo, UndoSpec, infer_kind
from .guardrail import PolicyGuardrail, policy
from .plan import PlanStep, PlanToken, make_plan, verify_plan
from .registry import PolicyRegistry, policy_resources
from .rules import RuleSheet
from .session import Session
from .settings import ALWAYS_ON, CHECKS, PolicySettings

__all__ = [
    "ALWAYS_ON",
    "CHECKS",
    "Catalogue",
    "OrderRules",
    "PlanStep",
    "PlanToken",
    "PolicyGuardrail",
    "PolicyRegistry",
    "PolicySettings",
    "RuleSheet",
    "Session",
    "ToolInfo",
    "UndoSpec",
    "infer_kind",
    "make_plan",
    "policy",
    "policy_resources",
    "verify_plan",
]
