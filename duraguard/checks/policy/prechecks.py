"""Stage two, the prechecks (the policy's admission chain): checks that may refuse a call before
anything else is asked.

Withdrawn tools, addresses that must not be reached, the approved plan, the plan's tool tier,
labels on values, and the payment limit. Each returns a :class:`Stop` or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._reading import norm_number
from ..._types import canonical_json
from ..address import address_allowed, targets
from .call import Call, Stop
from .plan import PlanToken, verify_plan
from .values import labels


def withdrawn(call: Call) -> Stop | None:
    """A tool the registry withdrew is refused."""
    if call.tool not in call.snap.withdrawn:
        return None
    return Stop(
        "withdrawn",
        f"the tool {call.tool!r} was withdrawn by its owner and cannot be used; do not call it again. "
        "Use another tool from your list, or tell the person this cannot be done now.",
    )


def address(call: Call) -> Stop | None:
    """An address the call would reach that must not be reached (private, internal) is refused."""
    for where, target in targets(dict(call.args)):
        ok, why = address_allowed(target, call.settings.allow)
        if not ok:
            return Stop(
                "address",
                f"{why} (argument {where}); a call may only reach public addresses. "
                "Call again with a public https URL, or ask the operator to allow this address.",
                path=where,
            )
    return None


def plan_step(call: Call) -> Stop | None:
    """Under an approved plan, a call that is not its next step is refused."""
    state = call.session.plan
    if state is None:
        return None
    try:
        token = PlanToken.model_validate(state.token)
        step = state.step
    except (ValueError, TypeError) as err:
        return Stop(
            "plan_step",
            f"the approved plan cannot be read ({type(err).__name__}); no call runs until it can",
            partial=True,
        )
    if call.keys is None:
        return Stop(
            "plan_step",
            "a plan is in force but no approver keys are configured to verify it; no call runs",
            partial=True,
        )
    bad = verify_plan(
        token, workflow_id=call.subject.context.workflow_id, keys=call.keys, now=call.session.now
    )
    if bad is not None:
        return Stop("plan_step", f"{bad}; no call runs outside an approved plan")
    call.plan = token
    if step >= len(token.steps):
        return Stop(
            "plan_step",
            f"every step of the approved plan ({len(token.steps)}) has run; a new call needs a new plan",
        )
    expected = token.steps[step]
    if expected.tool != call.tool or canonical_json(expected.args) != canonical_json(
        dict(call.args)
    ):
        shown = canonical_json(expected.args)
        return Stop(
            "plan_step",
            f"this call is not the next step of the approved plan. Step {step + 1} of {len(token.steps)} is "
            f"{expected.tool}({shown}); call exactly that, with exactly those values, or ask the person "
            "to approve a new plan.",
        )
    call.plan_step_ok = True
    return None


def tier(call: Call) -> Stop | None:
    """A tool above the session's (or the plan's) highest tier is refused."""
    ceilings = [
        c
        for c in (call.settings.max_tier, call.plan.max_tier if call.plan else None)
        if c is not None
    ]
    if call.session.max_tier is not None:
        ceilings.append(call.session.max_tier)
    if not ceilings or call.info is None:
        return None
    ceiling = min(ceilings)
    if call.info.tier <= ceiling:
        return None
    return Stop(
        "tier",
        f"the tool {call.tool!r} is tier {call.info.tier}, above this session's ceiling of tier {ceiling}; "
        f"use a tool of tier {ceiling} or lower, or ask the person for a plan that allows it.",
    )


def payment_limit(call: Call) -> Stop | None:
    """A payment over the tool's (or the settings') cap is refused."""
    info = call.info
    if info is None or not info.payment_field:
        return None
    cap = info.payment_cap if info.payment_cap is not None else call.settings.payment_cap
    if cap is None:
        return None
    fld = info.payment_field
    raw = call.args.get(fld)
    n = (
        norm_number(raw)
        if isinstance(raw, int | float | str) and not isinstance(raw, bool)
        else None
    )
    if n is None:
        return Stop(
            "payment_limit",
            f"{call.tool!r} pays out {fld!r}, which is {raw!r}, not an amount; give {fld} as a number",
        )
    amount = float(n)
    if amount < 0:
        return Stop("payment_limit", f"{call.tool!r} cannot pay a negative {fld} ({amount:g})")
    if amount > cap:
        return Stop(
            "payment_limit",
            f"{call.tool!r} may pay at most {cap:g} in one call; {fld}={amount:g} is over it. "
            f"Call with {fld} of {cap:g} or less, or ask the person how to proceed.",
        )
    return None


CHECKS: tuple[tuple[str, Callable[[Call], Stop | None]], ...] = (
    ("withdrawn", withdrawn),
    ("address", address),
    ("plan_step", plan_step),
    ("tier", tier),
    ("labels", labels),
    ("payment_limit", payment_limit),
)
