"""``policy``: the staged tool-call policy (tool kinds, admission, tool check, what was said)."""

from .catalogue import Catalogue, OrderRules, ToolInfo, UndoSpec, infer_kind
from .guardrail import PolicyGuardrail, policy
from .inference import KindReading, infer
from .plan import PlanStep, PlanToken, make_plan, verify_plan
from .presets import PRESETS, Preset
from .registry import PolicyRegistry, policy_resources
from .session import Session
from .settings import ALWAYS_ON, CHECKS, PolicySettings
from .sheet import RuleSheet

__all__ = [
    "ALWAYS_ON",
    "CHECKS",
    "PRESETS",
    "Catalogue",
    "KindReading",
    "OrderRules",
    "PlanStep",
    "PlanToken",
    "PolicyGuardrail",
    "PolicyRegistry",
    "PolicySettings",
    "Preset",
    "RuleSheet",
    "Session",
    "ToolInfo",
    "UndoSpec",
    "infer",
    "infer_kind",
    "make_plan",
    "policy",
    "policy_resources",
    "verify_plan",
]
