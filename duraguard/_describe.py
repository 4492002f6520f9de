"""Framework tools as the policy reads them: a description from the framework's own definition.

A tool registered with the plugin (``DuraguardPlugin(tools=...)``) is in the worker's catalogue:
the policy knows its kind, its arguments and the labels its results carry. A tool an agent
framework defines (an OpenAI Agents SDK ``FunctionTool``, a Pydantic AI ``ToolDefinition``, a
handoff) is not. An adapter describes each one from what the framework knows of it
(:func:`describe`), in workflow code, and the session takes it from there
(:meth:`duraguard.GuardSession.describe`):

* the kind: where the definition's owner marks one (``tools={"read_inbox": {"kind": "read"}}``,
  or a Pydantic AI tool's ``metadata={"duraguard": {...}}``); else the worker infers it from
  the name, the description and the arguments, as for any unmarked tool
  (:mod:`duraguard.checks.policy.inference`). The worker's catalogue file and tool kinds file
  still win, and a tool registered with the plugin under the same name wins over a
  description;
* the labels its results carry (outside content): where marked, those (``labels: []`` says
  its results are trusted); else, for a tool whose kind reads as ``read``, the kinds of content
  its name, description or arguments name (:data:`CONTENT_LABELS`: ``read_inbox`` -> ``email``,
  a tool taking a ``url`` -> ``web``). A call's result carries them into the session's
  provenance through the same seam as duraguard's own tools (``after_call(labels=...)``);
* the description and the input schema, bounded (:data:`MAX_DESCRIPTION_CHARS`,
  :data:`MAX_SCHEMA_BYTES`): a subject of a call carries its tool's description, and the kinds
  of the session's other described tools (:func:`described_for`).

On the worker, :func:`duraguard.engine.run_pass` puts the descriptions beside the catalogue
for the one check that carries them: a :class:`~duraguard.ToolDescription` reads as a tool
registered in code does (name, description, schema, kind, labels; roles and annotations as its
``meta``), and a tool the worker has under the same name wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._addresses import name_words
from ._types import ToolDescription, ToolKind
from .checks.policy.inference import infer
from .errors import ConfigurationError

MAX_DESCRIPTION_CHARS = 2_000
"""A description is cut at this length (the policy reads its verbs)."""
MAX_SCHEMA_BYTES = 16 * 1024
"""An input schema longer than this (JSON) is left out: the kind is read from the rest."""

CONTENT_LABELS: dict[str, tuple[str, ...]] = {
    "email": ("email", "emails", "mail", "mails", "inbox", "mailbox", "gmail", "outlook"),
    "web": ("web", "webpage", "page", "pages", "url", "urls", "website", "internet", "browse",
            "html", "http", "https", "link", "links", "scrape", "crawl"),
    "chat": ("slack", "chat", "channel", "channels", "dm", "dms", "conversation", "messages",
             "teams", "discord", "sms", "whatsapp"),
    "file": ("file", "files", "document", "documents", "doc", "docs", "drive", "attachment",
             "attachments", "pdf", "spreadsheet"),
    "reviews": ("review", "reviews", "comments", "feedback", "ratings"),
    "calendar": ("calendar", "event", "events", "meeting", "meetings", "invite", "invites"),
    "ticket": ("ticket", "tickets", "issue", "issues", "complaint", "complaints"),
}  # fmt: skip
"""The kinds of content other people write, by the words a reading tool names them with."""
_URL_ARGS = frozenset({"url", "uri", "link", "href", "page", "website", "address"})

MARK_FIELDS = ("kind", "labels", "destinations", "roles", "description")
"""What a mark may say of a framework tool."""


def describe(
    name: str,
    description: str = "",
    input_schema: Mapping[str, Any] | None = None,
    *,
    marks: Mapping[str, Any] | None = None,
    annotations: Mapping[str, bool] | None = None,
    where: str = "",
) -> ToolDescription:
    """A framework tool as the policy reads it (see the module docstring).

    Args:
        name: The tool's name, as the model calls it.
        description: What the framework tells the model about it.
        input_schema: Its arguments' JSON Schema.
        marks: What its owner says of it: ``kind`` (read, write, send), ``labels`` (what its
            results carry; ``[]``: trusted), ``destinations`` (argument names that say where
            a call goes), ``roles`` (argument name -> destination, text or value),
            ``description``.
        annotations: MCP-style hints (``readOnlyHint``, ...), where the framework has them.
        where: Where the marks come from, for an error's message.

    Raises:
        ConfigurationError: A mark that is not one of :data:`MARK_FIELDS` or is malformed.
    """
    given = _marks(dict(marks or {}), where or f"tool {name!r}")
    text = str(given.get("description", description) or "")[:MAX_DESCRIPTION_CHARS]
    schema = _bounded(input_schema)
    roles = dict(given.get("roles") or {})
    roles.update({d: "destination" for d in given.get("destinations") or ()})
    kind: ToolKind | None = given.get("kind")
    labels = given.get("labels")
    if labels is None:
        labels = content_labels(name, text, schema, kind=kind, annotations=annotations)
    return ToolDescription(
        name=name,
        description=text,
        input_schema=schema,
        kind=kind,
        labels=tuple(labels),
        annotations=dict(annotations) if annotations is not None else None,
        roles=roles,
    )


def _marks(marks: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(marks) - set(MARK_FIELDS))
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown mark {unknown[0]!r}; a framework tool's marks are "
            f"{', '.join(MARK_FIELDS)} (e.g. {{'kind': 'read', 'labels': ['email']}})"
        )
    kind = marks.get("kind")
    if kind not in (None, "read", "write", "send"):
        raise ConfigurationError(f"{where}: kind {kind!r} is not one of read, write, send")
    for key in ("labels", "destinations"):
        value = marks.get(key)
        if isinstance(value, str):
            marks[key] = [value]
        elif value is not None and (
            not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value)
        ):
            raise ConfigurationError(
                f"{where}: {key} must be a list of names, e.g. {key}: ['email']"
            )
    roles = marks.get("roles")
    if roles is not None and (
        not isinstance(roles, Mapping)
        or not all(v in ("destination", "text", "value") for v in roles.values())
    ):
        raise ConfigurationError(
            f"{where}: roles maps argument names to destination, text or value, "
            "e.g. roles: {'account': 'destination'}"
        )
    return marks


def _bounded(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(schema, Mapping):
        return None
    try:
        text = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    return json.loads(text) if len(text) <= MAX_SCHEMA_BYTES else None


def content_labels(
    name: str,
    description: str = "",
    input_schema: Mapping[str, Any] | None = None,
    *,
    kind: ToolKind | None = None,
    annotations: Mapping[str, bool] | None = None,
) -> tuple[str, ...]:
    """The labels of outside content a reading tool's results carry, from the words of its
    name, its description and its arguments (nothing for a tool that does not read: one
    marked write or send, or whose name and definition both read as one)."""
    if kind is not None and kind != "read":
        return ()
    if kind is None and "read" not in (
        kind_in_workflow(name, "", input_schema, annotations),
        kind_in_workflow(name, description, input_schema, annotations),
    ):
        return ()
    words = set(name_words(name)) | set(name_words(description[:MAX_DESCRIPTION_CHARS]))
    props = (input_schema or {}).get("properties") if isinstance(input_schema, Mapping) else None
    args = {w for p in (props or {}) for w in name_words(str(p))}
    found = [label for label, named in CONTENT_LABELS.items() if words & set(named)]
    if args & _URL_ARGS and "web" not in found:
        found.append("web")
    if annotations is not None and annotations.get("openWorldHint", True) and not found:
        found.append("open-world")
    return tuple(found)


def kind_in_workflow(
    name: str,
    description: str = "",
    input_schema: Mapping[str, Any] | None = None,
    annotations: Mapping[str, bool] | None = None,
) -> ToolKind:
    """The kind the definition reads as, in workflow code (the worker reads it again, where its
    kinds file and catalogue win); a tool nothing speaks for counts as a write."""
    reading = infer(name, description, input_schema, annotations)
    return reading.kind if reading is not None else "write"


def described_for(
    described: Mapping[str, ToolDescription], tool: str
) -> tuple[ToolDescription, ...]:
    """What a subject of a call of ``tool`` carries: its description in full, then the session's
    other described tools by name and kind (the policy reads earlier calls' kinds)."""
    own = described.get(tool)
    if own is None:
        return ()
    others = [
        ToolDescription(name=d.name, kind=d.kind or kind_in_workflow(
            d.name, d.description, d.input_schema, d.annotations
        ))
        for n, d in described.items()
        if n != tool
    ]  # fmt: skip
    return (own, *others)


def described(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] | None,
    metadata: Any,
    table: Mapping[str, Any],
) -> ToolDescription:
    """A framework tool whose definition carries a ``metadata`` mapping (a Pydantic AI
    ``ToolDefinition``, a LangChain ``BaseTool``): the marks under its ``"duraguard"`` key win
    over the adapter's ``tools={name: marks}`` table (:func:`marks_of`)."""
    own = metadata.get("duraguard") if isinstance(metadata, Mapping) else None
    given = {**(table.get(name) or {}), **(own if isinstance(own, Mapping) else {})}
    return describe(name, description or "", input_schema, marks=given, where=f"tool {name!r}")


def marks_of(table: Mapping[str, Mapping[str, Any]] | None, where: str) -> dict[str, Any]:
    """A ``tools={name: marks}`` table, each entry's marks checked now (a bad one is refused
    when the agent is guarded, not in a workflow)."""
    out: dict[str, Any] = {}
    for name, marks in (table or {}).items():
        if not isinstance(marks, Mapping):
            raise ConfigurationError(
                f"{where}: tools[{name!r}] must be a mapping of marks such as "
                "{'kind': 'read', 'labels': ['email']}"
            )
        out[str(name)] = _marks(dict(marks), f"{where}: tools[{name!r}]")
    return out
