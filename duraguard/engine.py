"""Run an ordered list of guardrails over one subject: pure Python, no Temporal.

The rules of a pass:

* guardrails run in the order given; one that does not declare the subject's placement is
  skipped;
* ``observe`` is recorded and the pass goes on;
* ``mask`` / ``rewrite`` replace the value and the pass goes on, so every later guardrail judges
  what would really run (a mask never lets a later check be skipped);
* the first ``deny`` / ``approve`` / ``halt`` ends the pass and decides, so a later guardrail can
  never overturn an earlier refusal;
* a guardrail that raises, exceeds its timeout, returns something that is not a verdict, or cannot
  be built refuses: ``deny`` with outcome ``partial``. With ``on_error="fail"`` its error is raised
  instead, failing the gated call;
* an ``approve`` that the subject's grant (a person's verified yes for exactly this value, from
  someone with the role asked) answers is satisfied, and the pass goes on;
* a ``mask`` / ``rewrite`` never changes where a call goes: at ``tool-args`` one that would
  change an argument addressing the call (a recipient, payee, URL, host, path, channel or
  account: :mod:`duraguard._addresses`, listed in :attr:`Subject.addresses`) refuses the call
  instead (``deny``, check ``duraguard.address``), naming the guardrail and the fields. No
  version of such a call is right to run: the original carries what the guardrail would hide,
  the replacement goes somewhere else.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Sequence
from typing import Any

from ._addresses import address_paths, field_name, moved
from ._deadline import within
from ._threads import Saturated
from ._types import (
    REFUSING,
    REPLACING,
    Context,
    Detection,
    NotJSON,
    PassResult,
    Reservation,
    Subject,
    Verdict,
)
from .guardrail import (
    Guardrail,
    GuardrailLike,
    GuardrailSpec,
    Resources,
    build,
    call_user,
    to_specs,
)

log = logging.getLogger("duraguard")


class GuardrailError(Exception):
    """Raised by :func:`run_pass` for a guardrail set to ``on_error="fail"``."""

    def __init__(self, guardrail: str, error: BaseException) -> None:
        super().__init__(f"guardrail {guardrail!r} failed: {type(error).__name__}: {error}")
        self.guardrail = guardrail
        self.error = error


def _unable(name: str, why: str, rule: str, late: Any = None, taken: Sequence[Any] = ()) -> Verdict:
    """The refusal of a guardrail that could not decide. ``late``: a verdict that came after the
    deadline; what it reserved rides on the refusal, so the loop gives it back (it releases what
    a refused call holds), instead of leaving a hold that no recorded verdict names. ``taken``:
    what the check said it may have taken when the deadline cut it off (a reserve under way,
    :func:`~duraguard._deadline.taking`), carried the same way."""
    held = tuple(late.reservations) if isinstance(late, Verdict) else ()
    ids = {r.id for r in held}
    held += tuple(r for r in taken if isinstance(r, Reservation) and r.id not in ids)
    return Verdict(
        action="deny",
        outcome="partial",
        by=name,
        reason=f"guardrail {name!r} could not decide ({why}); the call is refused until it can",
        detections=(Detection(rule=rule, detected=True),),
        reservations=held,
    )


async def _one(g: Guardrail, subject: Subject) -> Verdict:
    started = time.monotonic()
    out: Any = None
    work = None
    try:
        # A subclass may write a plain ``def check``: it runs in a thread, bounded the same way.
        # ``asyncio.timeout``, not ``wait_for``: no task of its own for each guardrail run.
        # The same deadline is handed to the check (``_deadline``): duraguard's own checks read
        # it as they work, so one that overruns stops, on whatever thread it runs.
        with within(g.timeout) as work:
            async with asyncio.timeout(g.timeout):
                out = await call_user(g.check, subject, label=f"guardrail {g.name!r}")
        if time.monotonic() - started > g.timeout:
            # An async check that blocked the event loop (``time.sleep``, a blocking client)
            # cannot be interrupted; its verdict arrives after the deadline and is not used
            # (what it reserved rides on the refusal, to be given back).
            raise TimeoutError
    except TimeoutError:
        log.error("duraguard: guardrail %s timed out after %ss", g.name, g.timeout)
        if g.on_error == "fail":
            raise GuardrailError(g.name, TimeoutError(f"timed out after {g.timeout}s")) from None
        taken = work.held if work is not None else ()
        return _unable(
            g.name, f"timed out after {g.timeout}s", "guardrail.timeout", late=out, taken=taken
        )
    except asyncio.CancelledError:
        raise
    except Saturated as err:
        if g.on_error == "fail":
            raise GuardrailError(g.name, err) from err
        return _unable(g.name, str(err), "guardrail.saturated")
    except Exception as err:  # fail closed: any error refuses
        log.error("duraguard: guardrail %s raised %s", g.name, type(err).__name__)
        if g.on_error == "fail":
            raise GuardrailError(g.name, err) from err
        return _unable(g.name, f"{type(err).__name__}: {err}", "guardrail.error")
    if not isinstance(out, Verdict):
        why = f"returned {type(out).__name__}, not a Verdict"
        if g.on_error == "fail":
            raise GuardrailError(g.name, TypeError(why))
        return _unable(g.name, why, "guardrail.error")
    return out.model_copy(update={"by": g.name}) if out.by != g.name else out


async def run_pass(
    guardrails: Sequence[GuardrailLike | Guardrail],
    subject: Subject,
    resources: Resources | None = None,
) -> PassResult:
    """Evaluate ``guardrails`` over ``subject`` in order and return the recorded outcome.

    A subject whose value is not plain JSON (NaN, an object, a non-string key) is refused before
    any guardrail runs: it has no canonical form to bind a verdict to.
    """
    try:
        bound = subject.digest()
    except NotJSON as err:
        return _not_json(subject, err)
    resources = _described(resources or Resources(), subject)
    subject = _addressed(subject, resources)
    verdicts: list[Verdict] = []
    skipped: list[str] = []
    current = subject
    replaced: Verdict | None = None
    asked: Verdict | None = None
    for item in guardrails:
        if subject.prejudged and _name(item) in subject.prejudged:
            continue  # judged before the value was recorded (it is as they left it)
        impl = _implementation(item, subject, resources)
        if isinstance(impl, Verdict):  # it could not be built: that refuses
            verdicts.append(impl)
            return _result(impl, verdicts, current, subject, skipped, bound)
        if impl is None or not impl.applies_to(current):
            skipped.append(_name(item))
            continue
        v = _granted(await _one(impl, current), current)
        if v.action in REPLACING and not (impl.replaces and _replaces(item)):
            # It said it never replaces, so it may have judged a value in the step that
            # records it: what it would hide is there already.
            why = f"it said replaces=False but returned {v.action}"
            v = _unable(impl.name, why, "guardrail.replaced")
        if v.action in REPLACING and current.addresses:
            v = _kept_addresses(v, current, resources)
        verdicts.append(v)
        if v.action == "approve" and current.preview:
            asked = asked or v  # a preview goes on: would a later guardrail refuse?
            continue
        if v.action in REFUSING:
            return _result(v, verdicts, current, subject, skipped, bound)
        if v.action in REPLACING:
            current = current.model_copy(update={"value": v.payload})
            replaced = v
    decided = asked or replaced or Verdict.allow()
    if any(v.outcome != "complete" for v in verdicts) and decided.outcome == "complete":
        decided = decided.model_copy(update={"outcome": "partial"})
    return _result(decided, verdicts, current, subject, skipped, bound)


def _replaces(item: GuardrailLike | Guardrail) -> bool:
    return not isinstance(item, GuardrailSpec) or item.replaces


def _name(item: GuardrailLike | Guardrail) -> str:
    return item.name if isinstance(item, Guardrail | GuardrailSpec) else to_specs([item])[0].name


def _implementation(
    item: GuardrailLike | Guardrail, subject: Subject, resources: Resources
) -> Guardrail | Verdict | None:
    """The guardrail to run for ``item``; ``None`` where it does not judge this placement; a
    refusal where it cannot be built (a missing classifier faults, it never passes)."""
    if isinstance(item, Guardrail):
        return item
    spec = item if isinstance(item, GuardrailSpec) else to_specs([item])[0]
    if not spec.applies_to(subject.placement):
        return None
    try:
        return build(spec, resources)
    except Exception as err:
        if spec.on_error == "fail":
            raise GuardrailError(spec.name, err) from err
        return _unable(spec.name, str(err), "guardrail.unavailable")


def _not_json(subject: Subject, err: NotJSON) -> PassResult:
    refused = Verdict(
        action="deny",
        outcome="partial",
        by="duraguard",
        check="duraguard.not-json",
        reason=f"the {subject.placement} value is not plain JSON ({err}); it is refused",
        detections=(Detection(rule="subject.not-json"),),
    )
    return PassResult(
        verdict=refused,
        verdicts=(refused,),
        placement=subject.placement,
        tool=subject.tool,
        call_id=subject.call_id,
    )


def _described(resources: Resources, subject: Subject) -> Resources:
    """``resources`` with the framework tools ``subject`` describes beside the worker's own
    (:mod:`duraguard._describe`), for this pass only."""
    extra = {d.name: d for d in subject.described if d.name not in resources.tools}
    if not extra:
        return resources
    out = copy.copy(resources)  # the same classifiers, guardrails and extra (its caches)
    out.tools = {**resources.tools, **extra}  # a description reads as a catalogue entry
    return out


def _address_paths(value: Any, subject: Subject, resources: Resources) -> tuple[str, ...]:
    tool = resources.tools.get(subject.tool or "")
    schema = subject.input_schema
    if not isinstance(schema, dict):
        schema = getattr(tool, "input_schema", None)
    meta = getattr(tool, "meta", None)
    roles = meta.get("roles") if isinstance(meta, dict) else getattr(tool, "roles", None)
    return address_paths(
        value,
        roles=roles if isinstance(roles, dict) else None,
        schema=schema if isinstance(schema, dict) else None,
        declared=getattr(tool, "destinations", None) or (),
    )


def _addressed(subject: Subject, resources: Resources) -> Subject:
    """``subject`` with :attr:`Subject.addresses` filled in: the arguments of a call that say
    where it goes (from its tool's declaration, its schema, their names and values)."""
    if subject.placement != "tool-args" or not isinstance(subject.value, dict):
        return subject
    found = _address_paths(subject.value, subject, resources)
    paths = tuple(dict.fromkeys((*subject.addresses, *found)))
    return (
        subject.model_copy(update={"addresses": paths}) if paths != subject.addresses else subject
    )


def _kept_addresses(v: Verdict, subject: Subject, resources: Resources) -> Verdict:
    """A replacement that would change where the call goes refuses the call instead."""
    after = _address_paths(v.payload, subject, resources)
    changed = moved(subject.value, v.payload, (*subject.addresses, *after))
    if not changed:
        return v
    fields = ", ".join(f"`{field_name(p)}`" for p in changed)
    found = sorted({d.rule for d in v.detections if d.path in changed})
    noun = "address" if len(changed) == 1 else "addresses"
    return Verdict(
        action="deny",
        outcome=v.outcome,
        by=v.by,
        check="duraguard.address",
        reason=(
            f"{v.by} would {v.action} {fields}, the {noun} of {subject.tool or 'this call'} "
            f"(where it goes{'; it found ' + ', '.join(found) + ' there' if found else ''}); a "
            "guardrail never changes where a call goes, so the call is refused as it stands"
        ),
        detections=(
            *v.detections,
            *(Detection(rule="address.changed", path=p) for p in changed),
        ),
    )


def _granted(v: Verdict, subject: Subject) -> Verdict:
    """An ``approve`` that a person's verified yes already answers lets the pass go on."""
    grant = subject.grant
    if v.action != "approve" or grant is None:
        return v
    role = v.ask.role if v.ask is not None else None
    if not grant.covers(subject.tool, subject.value, role):
        return v
    return Verdict(
        action="allow",
        by=v.by,
        check=v.check,
        detections=(*v.detections, Detection(rule="approval.granted", detail=grant.approver)),
    )


def _bare(v: Verdict) -> Verdict:
    """``v`` without its replacement: the pass's :attr:`PassResult.value` carries the final one
    (each mask's own copy would put the value in history once per replacing guardrail)."""
    return v if v.payload is None else v.model_copy(update={"payload": None})


def _result(
    decided: Verdict,
    verdicts: list[Verdict],
    current: Subject,
    original: Subject,
    skipped: list[str],
    bound: str,
) -> PassResult:
    replaced = current is not original and decided.action not in ("deny", "halt")
    return PassResult(
        verdict=_bare(decided),
        verdicts=tuple(_bare(v) for v in verdicts),
        value=current.value if replaced else None,
        replaced=replaced,
        subject_digest=bound,
        skipped=tuple(skipped),
        placement=original.placement,
        tool=original.tool,
        call_id=original.call_id,
    )


async def evaluate(
    guardrails: Sequence[GuardrailLike],
    value: Any,
    *,
    placement: Any = "tool-args",
    tool: str | None = None,
    schema: dict[str, Any] | bool | None = None,
    resources: Resources | None = None,
    call_id: str | None = None,
    **context: Any,
) -> PassResult:
    """Run guardrails over a value in plain Python, outside any workflow.

    Example::

        result = await duraguard.evaluate([schema(), pii()], {"amount": 5}, tool="issue-credit",
                                          schema={"type": "object"})
        if result.tripped: ...
    """
    session = context.pop("session", None)
    subject = Subject(
        placement=placement,
        value=value,
        tool=tool,
        call_id=call_id,
        schema=schema,
        context=Context(**context),
        session=session,
    )
    return await run_pass(guardrails, subject, resources)


def evaluate_sync(guardrails: Sequence[GuardrailLike], value: Any, **kw: Any) -> PassResult:
    """:func:`evaluate` for code with no event loop running."""
    return asyncio.run(evaluate(guardrails, value, **kw))
