"""A rule sheet: YAML (or a mapping) read into rules and limits, with the line and the fix for
every mistake (:class:`duraguard.errors.RuleSheetError`), and evaluated over one call. See
:mod:`.rules` for what they mean.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import RuleSheetError
from .rules import (
    _UNITS,
    OPERATORS,
    SUBJECTS,
    Condition,
    Facts,
    Hit,
    Limit,
    Rule,
    Then,
    Unknown,
    _matches,
    _over,
    _test,
)


class _Node:
    """A parsed YAML value with the line it starts on (1-based)."""

    __slots__ = ("line", "value")

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


def _compose(text: str, source: str) -> _Node:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise RuleSheetError(
            f"{source}{where}: not valid YAML ({getattr(err, 'problem', err)}); check the indentation"
        ) from None
    if root is None:
        return _Node({}, 1)
    return _convert(root)


def _convert(node: Any) -> _Node:
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        return _Node({str(k.value): _convert(v) for k, v in node.value}, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_convert(v) for v in node.value], line)
    return _Node(yaml.SafeLoader("").construct_object(node, deep=True), line)


def _plain(value: Any, line: int = 0) -> _Node:
    if isinstance(value, Mapping):
        return _Node({str(k): _plain(v, line) for k, v in value.items()}, line)
    if isinstance(value, list | tuple):
        return _Node([_plain(v, line) for v in value], line)
    return _Node(value, line)


def _unwrap(node: _Node) -> Any:
    if isinstance(node.value, dict):
        return {k: _unwrap(v) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [_unwrap(v) for v in node.value]
    return node.value


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, node: _Node, msg: str) -> RuleSheetError:
        where = f" line {node.line}" if node.line else ""
        return RuleSheetError(f"{self.source}{where}: {msg}")

    def mapping(self, node: _Node, what: str, known: tuple[str, ...]) -> dict[str, _Node]:
        if not isinstance(node.value, dict):
            raise self.fail(node, f"{what} must be a mapping (key: value lines)")
        for key, child in node.value.items():
            if key not in known:
                raise self.fail(child, f"{what}: unknown key {key!r}; known: {', '.join(known)}")
        return node.value

    def seq(self, node: _Node | None, what: str) -> list[_Node]:
        if node is None or node.value is None:
            return []
        if not isinstance(node.value, list):
            raise self.fail(node, f"{what} must be a list (lines starting with '- ')")
        return node.value

    def sheet(self, root: _Node) -> RuleSheet:
        top = self.mapping(root, "the rule sheet", ("version", "rules", "limits", "spending"))
        version = top.get("version")
        if version is not None and version.value != 1:
            raise self.fail(
                version, f"version {version.value!r} is not supported; write version: 1"
            )
        rules = tuple(self.rule(n) for n in self.seq(top.get("rules"), "rules"))
        limits = [self.limit(n, spending=False) for n in self.seq(top.get("limits"), "limits")]
        limits += [self.limit(n, spending=True) for n in self.seq(top.get("spending"), "spending")]
        names = [r.name for r in rules] + [lim.name for lim in limits]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise RuleSheetError(
                f"{self.source}: two rules are named {dup!r}; give each a unique name"
            )
        return RuleSheet(rules, tuple(limits), self.source)

    def name(self, m: dict[str, _Node], node: _Node, what: str) -> str:
        n = m.get("name")
        if n is None or not isinstance(n.value, str) or not n.value.strip():
            raise self.fail(
                node, f"every {what} needs a name, e.g. name: refunds over 100 need a manager"
            )
        return n.value.strip()

    def tools(self, m: dict[str, _Node], node: _Node, name: str) -> tuple[str, ...]:
        t = m.get("tool")
        if t is None:
            raise self.fail(
                node,
                f"rule '{name}': say which tool it is about, e.g. tool: refund_card (or tool: '*')",
            )
        value = t.value
        if isinstance(value, str):
            return (value,)
        if isinstance(value, list) and value and all(isinstance(x.value, str) for x in value):
            return tuple(x.value for x in value)
        raise self.fail(t, f"rule '{name}': tool must be a name or a list of names")

    def then(self, m: dict[str, _Node], name: str, default: Then) -> tuple[Then, str | None]:
        t = m.get("then")
        then = default if t is None else t.value
        if then not in ("refuse", "ask", "allow"):
            raise self.fail(
                t or _Node(None, 0),
                f"rule '{name}': then: {then!r} is not one of refuse, ask, allow",
            )
        r = m.get("role")
        role = None if r is None else r.value
        if role is not None and (not isinstance(role, str) or then != "ask"):
            raise self.fail(
                r or _Node(None, 0),
                f"rule '{name}': role names who must say yes and goes with then: ask",
            )
        return then, role

    def rule(self, node: _Node) -> Rule:
        m = self.mapping(node, "a rule", ("name", "tool", "when", "then", "role", "reason"))
        name = self.name(m, node, "rule")
        tools = self.tools(m, node, name)
        when_node = m.get("when")
        conds: list[_Node] = []
        if when_node is not None:
            conds = (
                [when_node]
                if isinstance(when_node.value, dict)
                else self.seq(when_node, f"rule '{name}': when")
            )
        then, role = self.then(m, name, "refuse")
        reason = m["reason"].value if "reason" in m else None
        return Rule(
            name,
            tools,
            tuple(self.condition(c, name) for c in conds),
            then,
            role,
            reason,
            node.line,
        )

    def condition(self, node: _Node, name: str) -> Condition:
        m, subject, op = self.condition_keys(node, name)
        target, fld = self.condition_target(m, subject, name)
        value = self.condition_value(m[op], subject, op, name)
        return Condition(subject, target, fld, op, value, node.line)

    def condition_keys(self, node: _Node, name: str) -> tuple[dict[str, _Node], str, str]:
        """A condition's mapping, its one subject and its one operator."""
        m = self.mapping(node, f"rule '{name}': a condition", (*SUBJECTS, "field", *OPERATORS))
        subjects = [k for k in m if k in SUBJECTS]
        ops = [k for k in m if k in OPERATORS]
        if len(subjects) != 1:
            raise self.fail(
                node,
                f"rule '{name}': a condition names one of {', '.join(SUBJECTS)}, e.g. arg: amount",
            )
        if len(ops) != 1:
            raise self.fail(
                node,
                f"rule '{name}': a condition has one operator of {', '.join(OPERATORS)}, e.g. gt: 100",
            )
        return m, subjects[0], ops[0]

    def condition_target(
        self, m: dict[str, _Node], subject: str, name: str
    ) -> tuple[Any, str | None]:
        """What a condition's subject names (an argument, a tool's result field, ...), and the
        field it reads."""
        target_node = m[subject]
        target = target_node.value
        fld = m["field"].value if "field" in m else None
        if subject == "result":
            if isinstance(target, dict):
                inner = _unwrap(target_node)
                target, fld = inner.get("tool"), inner.get("field", fld)
            if not isinstance(target, str) or not isinstance(fld, str):
                raise self.fail(
                    target_node,
                    f"rule '{name}': result: names a tool and a field, e.g. result: {{tool: get_order, field: status}}",
                )
        elif subject in ("arg", "usage") and not isinstance(target, str):
            raise self.fail(
                target_node, f"rule '{name}': {subject}: takes a name, e.g. {subject}: amount"
            )
        elif subject in ("kind", "agent", "principal"):
            target = subject
        return target, fld

    def condition_value(self, value_node: _Node, subject: str, op: str, name: str) -> Any:
        """The value a condition's operator compares with, checked for that operator."""
        value = _unwrap(value_node)
        if subject in ("kind", "agent", "principal") and op not in (
            "eq",
            "ne",
            "in",
            "not_in",
            "matches",
        ):
            raise self.fail(
                value_node, f"rule '{name}': {subject} compares with eq, ne, in, not_in or matches"
            )
        if op in ("gt", "gte", "lt", "lte") and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            raise self.fail(
                value_node, f"rule '{name}': {op} compares with a number, e.g. {op}: 100"
            )
        if op in ("in", "not_in") and not isinstance(value, list):
            raise self.fail(value_node, f"rule '{name}': {op} takes a list, e.g. {op}: [a, b]")
        if op == "exists" and not isinstance(value, bool):
            raise self.fail(value_node, f"rule '{name}': exists takes true or false")
        if op == "matches":
            try:
                re.compile(str(value))
            except re.error as err:
                raise self.fail(
                    value_node,
                    f"rule '{name}': matches: {value!r} is not a valid regular expression ({err})",
                ) from None
        return value

    def limit(self, node: _Node, *, spending: bool) -> Limit:
        known = ("name", "tool", "field", "max", "per", "then", "role") if spending else (
            "name", "tool", "count", "sum", "max", "per", "then", "role",
        )  # fmt: skip
        m = self.mapping(node, "a spending limit" if spending else "a limit", known)
        name = self.name(m, node, "limit")
        tools = self.tools(m, node, name)
        then, role = self.then(m, name, "refuse")
        if then == "allow":
            raise self.fail(
                node, f"limit '{name}': a limit refuses or asks; write then: refuse or then: ask"
            )
        per = self.per(m.get("per"), name)
        count = m["count"].value if "count" in m else None
        field_name = (m.get("field") or m.get("sum") or _Node(None, 0)).value
        top = m["max"].value if "max" in m else None
        if count is not None:
            if field_name is not None or top is not None:
                raise self.fail(
                    node,
                    f"limit '{name}': a limit has either count: N or sum: FIELD with max: N, not both",
                )
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise self.fail(
                    m["count"], f"limit '{name}': count must be a whole number >= 0, e.g. count: 3"
                )
            return Limit(name, tools, count, None, None, per, then, role, node.line)
        if (
            not isinstance(field_name, str)
            or isinstance(top, bool)
            or not isinstance(top, int | float)
        ):
            key = "field" if spending else "sum"
            raise self.fail(
                node,
                f"limit '{name}': give {key}: ARGUMENT and max: AMOUNT, e.g. {key}: amount, max: 500",
            )
        return Limit(name, tools, None, field_name, float(top), per, then, role, node.line)

    def per(self, node: _Node | None, name: str) -> float | None:
        if node is None or node.value is None:
            return None
        v = node.value
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return float(v)
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", str(v))
        if not m or float(m[1]) <= 0:
            raise self.fail(
                node,
                f"limit '{name}': per: {v!r} is not a window; write e.g. per: 1h (s, m, h, d, w)",
            )
        return float(m[1]) * _UNITS[m[2]]


class RuleSheet:
    """A loaded rule sheet: rules, limits and spending limits."""

    def __init__(
        self, rules: tuple[Rule, ...] = (), limits: tuple[Limit, ...] = (), source: str = "<rules>"
    ) -> None:
        self.rules = rules
        self.limits = limits
        self.source = source

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> RuleSheet:
        """Parse a rule sheet from a path, YAML text (containing a newline) or a mapping."""
        if isinstance(source, Mapping):
            return _Parser("<rules>").sheet(_plain(source))
        if isinstance(source, str) and "\n" in source:
            return _Parser("<rules>").sheet(_compose(source, "<rules>"))
        path = Path(source)
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise RuleSheetError(
                f"rule sheet {path} does not exist; create it or drop rules=..."
            ) from None
        return _Parser(str(path)).sheet(_compose(text, str(path)))

    def evaluate(self, facts: Facts) -> tuple[list[Hit], list[str]]:
        """Every rule and limit that applies, and what could not be decided."""
        hits: list[Hit] = []
        unknown: list[str] = []
        for rule in self.rules:
            if not _matches(rule.tools, facts.tool):
                continue
            try:
                if all(_test(c, facts) for c in rule.when):
                    why = rule.reason or f"rule '{rule.name}'" + (
                        f" ({self.source} line {rule.line})" if rule.line else ""
                    )
                    hits.append(Hit(rule.name, rule.then, rule.role, why, rule.line))
            except Unknown as err:
                unknown.append(f"rule '{rule.name}': {err}")
        for limit in self.limits:
            if not _matches(limit.tools, facts.tool):
                continue
            try:
                over = _over(limit, facts)
            except Unknown as err:
                unknown.append(f"limit '{limit.name}': {err}")
                continue
            if over:
                hits.append(
                    Hit(
                        limit.name,
                        limit.then,
                        limit.role,
                        f"limit '{limit.name}': {over}",
                        limit.line,
                    )
                )
        return hits, unknown
