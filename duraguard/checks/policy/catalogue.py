"""The policy's catalogue of tools: each tool's kind, agents, labels, undo, order rules and limits.

A catalogue merges the tools registered in code (:class:`duraguard.tools.Tool`) with a
catalogue file (YAML or JSON); the file's entries override the code's field by field. A tool's
kind comes from the tool kinds file (which always wins), then the tool's own mark, then
inference from its name, description and arguments; a tool nobody marked counts as a write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError
from .inference import Kind, KindReading, KindSource, infer

__all__ = ["KINDS", "Catalogue", "Kind", "KindReading", "KindSource", "ToolInfo", "infer_kind"]

KINDS: tuple[Kind, ...] = ("read", "write", "send")
ROLES = ("destination", "text", "value")
"""What an argument is to the policy: where something goes, free text, or any other value."""


@dataclass(frozen=True)
class OrderRules:
    """When a tool may run: only after some tools ran, never after others, at most N times."""

    after: tuple[str, ...] = ()
    not_after: tuple[str, ...] = ()
    max_calls: int | None = None


@dataclass(frozen=True)
class UndoSpec:
    """The tool that reverses this one, and how its values map onto this step's.

    ``mapping`` maps each argument of the undo call to ``args.NAME`` or ``result.NAME`` of the
    step it reverses (a bare ``NAME`` means ``args.NAME``).
    """

    tool: str
    mapping: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolInfo:
    """What the policy knows of one tool."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None
    kind: Kind | None = None
    agents: frozenset[str] | None = None
    labels: tuple[str, ...] = ()
    """Labels its results carry (``web``, ``email``: outside content)."""
    accepts_labels: tuple[str, ...] | None = None
    """Labels of values it is cleared to take; ``None``: its own labels (reads: any label)."""
    undo: UndoSpec | None = None
    order: OrderRules = field(default_factory=OrderRules)
    tier: int = 0
    payment_field: str | None = None
    payment_cap: float | None = None
    annotations: Mapping[str, Any] | None = None
    """MCP-style hints (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
    ``openWorldHint``), read when nothing marked the tool's kind."""
    roles: Mapping[str, str] = field(default_factory=dict)
    """Argument name -> ``destination``, ``text`` or ``value``, where the name does not say."""
    asked_by: tuple[str, ...] | None = None
    """Words a person uses to ask for what this tool does (``pay``, ``transfer``); ``None``:
    read from its name."""


_FIELDS = {
    "description", "input_schema", "kind", "agents", "labels", "accepts_labels", "undo", "order",
    "tier", "payment_field", "payment_cap", "annotations", "roles", "asked_by",
}  # fmt: skip


def from_code(tool: Any) -> ToolInfo:
    """A :class:`ToolInfo` from a :class:`duraguard.tools.Tool` (or anything shaped like one)."""
    meta = dict(getattr(tool, "meta", None) or {})
    undo = getattr(tool, "undo", None)
    base = ToolInfo(
        name=str(tool.name),
        description=str(getattr(tool, "description", "") or ""),
        input_schema=getattr(tool, "input_schema", None),
        kind=getattr(tool, "kind", None),
        agents=getattr(tool, "agents", None),
        labels=tuple(getattr(tool, "labels", ()) or ()),
        undo=UndoSpec(undo.tool, dict(undo.mapping)) if undo is not None else None,
        tier=int(getattr(tool, "tier", 0) or 0),
        payment_field=getattr(tool, "payment_field", None),
    )
    extra = {
        k: v
        for k, v in meta.items()
        if k in ("accepts_labels", "order", "payment_cap", "annotations", "roles", "asked_by")
    }
    declared = tuple(getattr(tool, "destinations", ()) or ())
    if declared:  # @duraguard.tool(destinations=[...]): judged as destinations
        extra["roles"] = {**{d: "destination" for d in declared}, **dict(extra.get("roles") or {})}
    return _merge(base, extra, where=f"tool {base.name!r} meta") if extra else base


def _merge(base: ToolInfo, entry: Mapping[str, Any], *, where: str) -> ToolInfo:  # noqa: C901  (one branch per catalogue field, each validated where a person wrote it)
    unknown = sorted(set(entry) - _FIELDS - {"name"})
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field {unknown[0]!r}; known: {', '.join(sorted(_FIELDS))}"
        )
    upd: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "name":
            continue
        if key == "kind":
            if value not in (*KINDS, None):
                raise ConfigurationError(f"{where}: kind {value!r} is not one of read, write, send")
            upd["kind"] = value
        elif key == "agents":
            upd["agents"] = None if value is None else frozenset(_names(value, where, key))
        elif key in ("labels", "accepts_labels", "asked_by"):
            upd[key] = None if value is None else tuple(_names(value, where, key))
        elif key == "annotations":
            if value is not None and not isinstance(value, Mapping):
                raise ConfigurationError(
                    f"{where}: annotations must be a mapping, e.g. annotations: {{readOnlyHint: true}}"
                )
            upd["annotations"] = None if value is None else dict(value)
        elif key == "roles":
            upd["roles"] = _roles(value, where)
        elif key == "undo":
            upd["undo"] = _undo(value, where)
        elif key == "order":
            upd["order"] = _order(value, where)
        elif key == "tier":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigurationError(f"{where}: tier must be a whole number, e.g. tier: 2")
            upd["tier"] = value
        elif key == "payment_cap":
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigurationError(
                    f"{where}: payment_cap must be a number >= 0, e.g. payment_cap: 500"
                )
            upd["payment_cap"] = float(value)
        elif key == "input_schema":
            if value is not None and not isinstance(value, dict):
                raise ConfigurationError(f"{where}: input_schema must be a JSON Schema object")
            upd["input_schema"] = value
        else:
            upd[key] = value if value is None else str(value)
    return replace(base, **upd)


def _names(value: Any, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple | set | frozenset) or not all(
        isinstance(v, str) for v in value
    ):
        raise ConfigurationError(f"{where}: {key} must be a list of names, e.g. {key}: [a, b]")
    return list(value)


def _roles(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(v in ROLES for v in value.values()):
        raise ConfigurationError(
            f"{where}: roles maps argument names to one of {', '.join(ROLES)}, "
            "e.g. roles: {account: destination}"
        )
    return {str(k): str(v) for k, v in value.items()}


def _undo(value: Any, where: str) -> UndoSpec | None:
    if value is None:
        return None
    if isinstance(value, str):
        return UndoSpec(value)
    if isinstance(value, UndoSpec):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("tool"), str):
        mapping = value.get("mapping") or {}
        if not isinstance(mapping, Mapping) or not all(
            isinstance(v, str) for v in mapping.values()
        ):
            raise ConfigurationError(
                f"{where}: undo.mapping maps undo arguments to args.X or result.X"
            )
        return UndoSpec(value["tool"], {str(k): str(v) for k, v in mapping.items()})
    raise ConfigurationError(
        f"{where}: undo must be a tool name or {{tool: NAME, mapping: {{arg: result.field}}}}"
    )


def _order(value: Any, where: str) -> OrderRules:
    if isinstance(value, OrderRules):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{where}: order must be a mapping such as {{after: [get_order], max_calls: 2}}"
        )
    bad = sorted(set(value) - {"after", "not_after", "max_calls"})
    if bad:
        raise ConfigurationError(
            f"{where}: unknown order rule {bad[0]!r}; known: after, not_after, max_calls"
        )
    max_calls = value.get("max_calls")
    if max_calls is not None and (
        not isinstance(max_calls, int) or isinstance(max_calls, bool) or max_calls < 0
    ):
        raise ConfigurationError(f"{where}: order.max_calls must be a whole number >= 0")
    return OrderRules(
        after=tuple(_names(value.get("after", []), where, "order.after")),
        not_after=tuple(_names(value.get("not_after", []), where, "order.not_after")),
        max_calls=max_calls,
    )


def load_mapping(source: str | Path | Mapping[str, Any], what: str) -> dict[str, Any]:
    """A YAML/JSON file or an in-memory mapping, as a dict."""
    if isinstance(source, Mapping):
        return dict(source)
    import yaml

    path = Path(source)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigurationError(
            f"{what} file {path} does not exist; create it or drop the option"
        ) from None
    except yaml.YAMLError as err:
        raise ConfigurationError(f"{what} file {path} is not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"{what} file {path} must be a mapping at the top level")
    return data


class Catalogue:
    """The tools the policy knows, by name."""

    def __init__(self, tools: Mapping[str, ToolInfo]) -> None:
        self.tools = dict(tools)
        self.undo_of: dict[str, list[str]] = {}
        for info in self.tools.values():
            if info.undo is not None:
                self.undo_of.setdefault(info.undo.tool, []).append(info.name)
        self.has_send = any(t.kind == "send" for t in self.tools.values())

    def get(self, name: str) -> ToolInfo | None:
        return self.tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __len__(self) -> int:
        return len(self.tools)

    @classmethod
    def build(
        cls, code: Mapping[str, Any] | None = None, file: Mapping[str, Any] | None = None
    ) -> Catalogue:
        """Merge code tools with a catalogue file's ``tools:`` mapping (the file wins per field)."""
        tools: dict[str, ToolInfo] = {}
        for name, t in (code or {}).items():
            tools[name] = t if isinstance(t, ToolInfo) else from_code(t)
        entries = (file or {}).get("tools", file or {})
        if not isinstance(entries, Mapping):
            raise ConfigurationError(
                "a catalogue maps tool names to entries: tools: {get_order: {kind: read}}"
            )
        for name, entry in entries.items():
            if entry is None:
                entry = {}
            if not isinstance(entry, Mapping):
                raise ConfigurationError(
                    f"catalogue entry {name!r} must be a mapping such as {{kind: read}}"
                )
            tools[str(name)] = _merge(
                tools.get(str(name), ToolInfo(name=str(name))),
                entry,
                where=f"catalogue entry {name!r}",
            )
        return cls(tools)


def infer_kind(info: ToolInfo) -> Kind | None:
    """A kind guessed from the tool's annotations, name, description and arguments."""
    reading = infer(info.name, info.description, info.input_schema, info.annotations)
    return reading.kind if reading is not None else None


def kind_of(
    info: ToolInfo | None, name: str, kinds_file: Mapping[str, str], *, infer_kinds: bool
) -> KindReading:
    """The kind a tool counts as, who said so and how sure that is.

    The tool kinds file wins, then the tool's own mark, then (with ``infer_kinds``) its
    annotations and its name, description and arguments; a tool nothing speaks for is a write.
    """
    filed = kinds_file.get(name)
    if filed in KINDS:
        return KindReading(filed, "file", 1.0, "the tool kinds file says so")
    if info is not None and info.kind in KINDS:
        return KindReading(info.kind, "mark", 1.0, "the tool is marked so")
    if infer_kinds and info is not None:
        guessed = infer(info.name, info.description, info.input_schema, info.annotations)
        if guessed is not None:
            return guessed
    return KindReading("write", "default", 0.0, "nobody marked it, so it counts as a write")


def load_kinds(source: str | Path | Mapping[str, Any] | None) -> dict[str, str]:
    """The tool kinds file: ``{tool: read|write|send}`` (optionally under ``kinds:``)."""
    if source is None:
        return {}
    data = load_mapping(source, "tool kinds")
    data = data.get("kinds", data)
    out: dict[str, str] = {}
    for name, kind in data.items():
        if kind not in KINDS:
            raise ConfigurationError(
                f"tool kinds file: {name}: {kind!r} is not one of read, write, send"
            )
        out[str(name)] = str(kind)
    return out
