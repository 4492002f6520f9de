"""Stage three, the tool check: ten rules, in order; the first refusal decides.

Allowed tools, session record, arguments, destinations, order, undo, your rules, outside
content, confirmation, any other write. A rule that asks does not end the stage: asks are held
until the confirmation check, which either finds a person's valid signed yes for this exact call
(the call runs), refuses (a yes for another call, an altered call, an expired yes, or nobody
who could say yes), or lets the first ask decide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._reading import EMAIL, URL
from ..._types import canonical_json
from .._text import leaves, pointer
from ..schema import problems
from .call import Call, Stop
from .inference import name_words
from .origins import origins
from .record import session_record
from .rules import Facts, strictest
from .task import task

_ADDRESS_KEYS = (
    "email",
    "url",
    "uri",
    "link",
    "href",
    "host",
    "website",
    "domain",
    "address",
    "homepage",
    "endpoint",
)
_ADDRESS_FORMATS = frozenset(
    {
        "email",
        "idn-email",
        "uri",
        "iri",
        "uri-reference",
        "iri-reference",
        "hostname",
        "idn-hostname",
    }
)


def allowed_tools(call: Call) -> Stop | None:
    """A tool the catalogue does not list is refused."""
    if call.info is None:
        names = sorted(call.snap.catalogue.tools)
        listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        return Stop(
            "allowed_tools", f"there is no tool named {call.tool!r}; use one of: {listed or 'none'}"
        )
    agents = call.info.agents
    if agents is not None and call.agent not in agents:
        who = call.agent or "an unnamed agent"
        return Stop(
            "allowed_tools",
            f"{who} may not use {call.tool!r} (it is for: {', '.join(sorted(agents))}); use another tool",
        )
    return None


def arguments(call: Call) -> Stop | None:
    """Arguments that do not match the tool's input schema are refused."""
    schema = call.subject.input_schema
    if schema is None:
        schema = call.info.input_schema if call.info else None
    if schema is None or schema is True:
        return None
    if schema is False:
        return Stop("arguments", f"the schema of {call.tool!r} accepts no arguments at all")
    found = problems(schema, dict(call.args))
    if not found:
        return None
    listed = "; ".join(f"{where}: {msg}" for where, _, msg in found[:8])
    return Stop(
        "arguments",
        f"the arguments for {call.tool!r} do not fit its schema - {listed}. Fix them and call again.",
        path=found[0][0],
    )


def _declared(path: tuple[Any, ...], schema: dict[str, Any] | None) -> bool:
    key = str(path[0]).lower() if path else ""
    if any(k in key for k in _ADDRESS_KEYS):
        return True
    prop = ((schema or {}).get("properties") or {}).get(str(path[0])) if path else None
    return isinstance(prop, dict) and prop.get("format") in _ADDRESS_FORMATS


_FILTERS = frozenset(
    {
        "sender", "from", "to", "recipient", "recipients", "cc", "bcc", "participant",
        "participants", "attendee", "attendees", "query", "q", "search", "filter", "keyword",
        "keywords", "term", "contact", "user", "author", "owner", "member", "with", "by",
    }
)  # fmt: skip
"""Words of a read's argument that make it a filter: an address there selects, it goes nowhere."""


def destinations(call: Call) -> Stop | None:
    """A call that is no send but carries an address its schema does not declare is refused."""
    if call.kind == "send":
        return None
    schema = call.info.input_schema if call.info else None
    for path, leaf in leaves(dict(call.args)):
        if not isinstance(leaf, str) or _declared(path, schema):
            continue
        if call.kind == "read" and path and _FILTERS & set(name_words(str(path[0]))):
            continue  # search_emails(sender="ana@x.com") reads ana's mail, it sends nothing
        m = EMAIL.search(leaf) or URL.search(leaf)
        if m:
            return Stop(
                "destinations",
                f"{pointer(path)} carries an address ({m.group(0)!r}), but {call.tool!r} is not a tool that "
                "sends things out. Remove the address, or use a tool that sends.",
                path=pointer(path),
            )
    return None


def order(call: Call) -> Stop | None:
    """A call out of the order its tool declares (a step that must come first) is refused."""
    if call.info is None:
        return None
    rules = call.info.order
    counts = call.session.tool_counts
    for before in rules.after:
        if not counts.get(before):
            return Stop(
                "order",
                f"{call.tool!r} runs only after {before!r}; call {before} first, then {call.tool} again",
            )
    for blocker in rules.not_after:
        if counts.get(blocker):
            return Stop(
                "order",
                f"{call.tool!r} never runs after {blocker!r}, which already ran in this session",
            )
    if rules.max_calls is not None and counts.get(call.tool, 0) >= rules.max_calls:
        return Stop(
            "order",
            f"{call.tool!r} may run at most {rules.max_calls} times in a session; it already ran {counts.get(call.tool, 0)}",
        )
    return None


def _expected(entry: Any, source: str) -> tuple[bool, Any]:
    where, _, name = source.partition(".") if "." in source else ("args", "", source)
    bag = entry.result_fields if where == "result" else entry.args
    return (name in bag, bag.get(name))


def undo(call: Call) -> Stop | None:
    """An undo must reverse a step that ran, with that step's values."""
    reverses = call.snap.catalogue.undo_of.get(call.tool, [])
    target = call.session.compensation_of
    if target is None:
        if reverses:
            return Stop(
                "undo",
                f"{call.tool!r} undoes {', '.join(reverses)}; say which step it reverses (compensation_of)",
            )
        return None
    entry = next((e for e in call.session.entries if e.index == target), None)
    if entry is None:
        return Stop(
            "undo",
            f"step {target}, which this undo names, is not in the session record",
            partial=True,
        )
    spec = call.snap.catalogue.get(entry.tool)
    if spec is None or spec.undo is None or spec.undo.tool != call.tool:
        return Stop("undo", f"{call.tool!r} is not the undo of {entry.tool!r} (step {target})")
    if not entry.ran or not entry.ok:
        return Stop("undo", f"step {target} ({entry.tool}) never ran, so there is nothing to undo")
    again = list(call.session.undone_by) or [
        e.index for e in call.session.entries if e.compensation_of == target and e.ran
    ]
    if again:
        return Stop(
            "undo",
            f"step {target} ({entry.tool}) was already undone by call {again[0]}; a step is undone only once",
        )
    wrong = []
    for arg, source in spec.undo.mapping.items():
        present, want = _expected(entry, source)
        if not present:
            return Stop(
                "undo", f"step {target} has no {source} to check {arg!r} against", partial=True
            )
        if canonical_json(call.args.get(arg)) != canonical_json(want):
            wrong.append(f"{arg}={want!r}")
    if wrong:
        return Stop(
            "undo",
            f"this undo does not match step {target} ({entry.tool}); call {call.tool} with {', '.join(wrong)}",
        )
    return None


def your_rules(call: Call) -> Stop | None:
    """The rule sheet's rules and limits: the strictest that applies decides."""
    facts = Facts(
        call.tool, call.args, call.kind, call.agent, call.subject.context.principal, call.session
    )
    hits, unknown = call.snap.rules.evaluate(facts)
    decided = strictest(hits)
    if decided is not None and decided.then == "refuse":
        return Stop(
            "your_rules",
            f"refused by the rule '{decided.name}': {decided.reason}. Change the call so the rule no longer applies, or tell the person.",
        )
    if unknown:
        return Stop(
            "your_rules",
            f"the rules cannot be decided for this call: {unknown[0]}; it is refused until they can",
            partial=True,
        )
    if decided is not None and decided.then == "ask":
        role = f" from a {decided.role}" if decided.role else ""
        call.asks.append(
            Stop(
                "your_rules",
                f"the rule '{decided.name}' needs a person's yes{role}: {decided.reason}",
                ask=True,
                role=decided.role,
            )
        )
    elif decided is not None:
        call.rule_allowed = True
    return None


def outside_content(call: Call) -> Stop | None:
    """A write or send after outside content entered the session, as ``taint_policy`` says."""
    seen = call.session.labels_seen
    mode = call.settings.taint_policy
    if call.kind == "read" or not seen or mode == "off":
        return None
    if mode in ("task", "confirm"):
        stop = task(call)
        if mode == "task" or stop is not None:
            return stop  # confirm: what the person never asked for is refused, the rest asked
    o = origins(call)
    read = "; ".join(o.outside_read()) or ", ".join(seen)
    does = "sends something out" if call.kind == "send" else "changes something"
    why = f"outside content ({read}) entered this session, and {call.tool!r} {does}"
    if mode == "refuse":
        return Stop(
            "outside_content",
            f"{why}; after outside content only reads may run. Tell the person what you found instead.",
        )
    call.asks.append(
        Stop(
            "outside_content",
            f"{why}: confirm the person wants this call, and that it was not asked for by that "
            f"content. {o.traced()}",
            ask=True,
        )
    )
    return None


def _needs_yes(call: Call) -> bool:
    return bool(call.asks) or (
        call.kind != "read" and not call.rule_allowed and not call.plan_step_ok
    )


def _roles(call: Call) -> list[str]:
    return sorted({a.role for a in call.asks if a.role})


def _nobody(keys: Any, role: str | None) -> bool:
    if keys is None:
        return False  # no keys configured here: the approval step checks the signature later
    if not len(keys):
        return True
    return role is not None and role not in keys.roles()


def confirmation(call: Call) -> Stop | None:
    """A person's yes, verified once by the gate (:func:`duraguard.approvals.verify`), reaches
    the policy as ``subject.grant``; here it must cover exactly this call and every role asked."""
    grant = call.subject.grant
    if grant is None:
        if _needs_yes(call):
            needed: list[str | None] = [*_roles(call)] or [None]
            for role in needed:
                if _nobody(call.keys, role):
                    who = f"nobody with the role {role!r}" if role else "nobody"
                    return Stop(
                        "confirmation",
                        f"this call needs a person's yes and {who} can give it; it does not run",
                    )
        return None
    if not grant.covers(call.tool, dict(call.args)):
        return Stop(
            "confirmation",
            f"the yes {grant.approver} gave was for another call than this one (an altered call); "
            "it is refused. Ask the person again for this exact call.",
        )
    missing = [r for r in _roles(call) if r not in grant.roles]
    if missing:
        # Stays an ask: the gate asks someone who holds the role.
        call.asks[:] = [a for a in call.asks if a.role in missing]
        return None
    call.confirmed = True
    call.asks.clear()
    return None


def any_other_write(call: Call) -> Stop | None:
    """A write nothing else allowed (no rule, plan step or confirmation) is asked about."""
    if call.kind == "read" or call.rule_allowed or call.plan_step_ok or call.confirmed or call.asks:
        return None
    if call.kind_source in ("default", "withheld"):
        why = (
            "nobody marked it as a read"
            if call.kind_source == "default"
            else "tool kinds are switched off"
        )
        call.asks.append(
            Stop(
                "tool_kinds",
                f"{call.tool!r} counts as a write because {why}; a person must say yes (mark it read in the tool kinds file if it only reads)",
                ask=True,
            )
        )
    else:
        verb = "sends something out" if call.kind == "send" else "changes something"
        call.asks.append(
            Stop(
                "any_other_write",
                f"{call.tool!r} {verb} and no rule allows it; a person must say yes",
                ask=True,
            )
        )
    return None


CHECKS: tuple[tuple[str, Callable[[Call], Stop | None]], ...] = (
    ("allowed_tools", allowed_tools),
    ("session_record", session_record),
    ("arguments", arguments),
    ("destinations", destinations),
    ("order", order),
    ("undo", undo),
    ("your_rules", your_rules),
    ("outside_content", outside_content),
    ("confirmation", confirmation),
    ("any_other_write", any_other_write),
)
