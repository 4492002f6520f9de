"""Which of a call's arguments say where it goes: its address fields.

A recipient, a payee, a URL, a host, a path, a channel, an account: the value that addresses a
call. The policy reads the same words to judge where each value came from (``role_of``); the
engine reads them to keep every guardrail from changing where a call goes: a ``mask`` or
``rewrite`` that would change an address field refuses the call (see
:func:`duraguard.engine.run_pass`). Pure and deterministic.

An argument addresses its call when its tool says so (``@duraguard.tool(destinations=[...])``
or a catalogue's ``roles``), when its schema's ``format`` is an email, URI or host name, when
its name says so (``to``, ``recipient_iban``, ``share_with``, ``webhook_url``, ``file_path``)
or, for an argument whose name says nothing, when its value is a URL or a host name as a whole.
In a nested value the innermost key that says something decides (``{"email": {"to": ...,
"body": ...}}``: ``to`` addresses, ``body`` is text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal

from ._destinations import destination_of

Role = Literal["destination", "text", "value"]

DESTINATION_WORDS = frozenset(
    {
        "to", "cc", "bcc", "recipient", "recipients", "receiver", "receivers", "email", "emails",
        "address", "addresses", "url", "uri", "link", "href", "webhook", "endpoint", "host",
        "domain", "website", "channel", "channels", "user", "users", "username", "member",
        "members", "participant", "participants", "attendee", "attendees", "invitee",
        "invitees", "guest", "guests", "share", "iban", "account", "payee", "beneficiary",
        "phone", "handle", "contact", "contacts", "assignee", "owner", "destination", "target",
        "person", "people", "with",
    }
)  # fmt: skip
"""Words of an argument's name that make it a destination (``recipient_iban``, ``share_with``)."""
TEXT_WORDS = frozenset(
    {
        "body", "text", "message", "content", "subject", "note", "notes", "description",
        "comment", "comments", "title", "summary", "caption", "reason", "memo", "details",
        "reply", "answer", "post", "status", "bio", "agenda", "markdown", "html", "prompt",
    }
)  # fmt: skip
"""Words of an argument's name that make it free text."""
ID_WORDS = frozenset({"id", "ids", "uid", "uuid", "key", "ref"})
"""Words that make an argument say which thing, not where it goes (``email_id``)."""
PATH_WORDS = frozenset(
    {"path", "paths", "filepath", "filename", "folder", "directory", "dir", "bucket", "repo"}
)
"""Words of an argument's name that say where a write lands (``file_path``, ``folder``): an
address for the engine; the policy judges them as values (where they came from, not where
they send)."""
ADDRESS_FORMATS = frozenset({"email", "idn-email", "uri", "iri", "hostname", "idn-hostname"})
"""JSON Schema formats of an argument that addresses its call."""


@lru_cache(maxsize=4096)
def _words(name: str) -> tuple[str, ...]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return tuple(w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w)


def name_words(name: str) -> list[str]:
    """A name's words: ``sendEmail``, ``send-email`` and ``send.email`` are ``send email``."""
    return list(_words(name))


def role_of(name: str, value: Any, roles: Mapping[str, str], prop: Mapping[str, Any]) -> Role:
    """An argument's role from the tool's ``roles``, its schema's format, its name and its value
    (as the policy reads it: a value that is a destination as a whole is one, whatever its name)."""
    given = roles.get(name)
    if given in ("destination", "text", "value"):
        return given  # type: ignore[return-value]
    if prop.get("format") in ADDRESS_FORMATS:
        return "destination"
    words = set(name_words(name))
    if isinstance(value, str) and destination_of(value) is not None:
        return "destination"
    if words & ID_WORDS:
        return "value"  # email_id, event_id: which thing, not where it goes
    if words & TEXT_WORDS:
        return "text"
    if words & DESTINATION_WORDS:
        return "destination"
    if isinstance(value, str) and len(value.split(None, 5)) > 5:
        return "text"
    return "value"


def _key_says(name: str, roles: Mapping[str, str], prop: Mapping[str, Any]) -> bool | None:
    """Whether an argument named ``name`` addresses its call by what is declared of it or by
    its name alone (``None``: neither says)."""
    given = roles.get(name)
    if given in ("destination", "text", "value"):
        return given == "destination"
    if prop.get("format") in ADDRESS_FORMATS:
        return True
    words = set(_words(name))
    if words & ID_WORDS or words & TEXT_WORDS:
        return False
    if words & (DESTINATION_WORDS | PATH_WORDS):
        return True
    return None


def _pointer(path: str, key: Any) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def address_paths(
    args: Any,
    *,
    roles: Mapping[str, str] | None = None,
    schema: Mapping[str, Any] | None = None,
    declared: Iterable[str] = (),
) -> tuple[str, ...]:
    """The JSON Pointers (``#/to``, ``#/to/0``) of every scalar of ``args`` that addresses
    the call, in order.

    Args:
        args: the call's arguments (a JSON object; anything else has no address fields).
        roles: argument name -> ``destination`` / ``text`` / ``value``, where its tool says.
        schema: the tool's input JSON Schema (its properties' ``format`` is read).
        declared: argument names the tool declares as its destinations.
    """
    if not isinstance(args, dict):
        return ()
    named = {**(roles or {}), **{d: "destination" for d in declared}}
    props = (schema or {}).get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    out: list[str] = []

    def walk(value: Any, path: str, says: bool | None, top: bool) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                prop = props.get(k) if top else None
                key = _key_says(
                    str(k), named if top else {}, prop if isinstance(prop, Mapping) else {}
                )
                walk(v, _pointer(path, k), says if key is None else key, False)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, _pointer(path, i), says, False)
        elif isinstance(value, str) and (says or (says is None and _reaches(value))):
            out.append(path)
        elif says and isinstance(value, int | float) and not isinstance(value, bool):
            out.append(path)  # an account number

    walk(args, "#", None, True)
    return tuple(out)


def _reaches(value: str) -> bool:
    """A value that is, as a whole, a URL or a host name: a place the call reaches."""
    found = destination_of(value)
    return found is not None and found[0] == "url"


def value_at(value: Any, pointer: str) -> tuple[bool, Any]:
    """``(found, leaf)`` at a JSON Pointer made by :func:`address_paths`."""
    parts = pointer.removeprefix("#").split("/")[1:]
    for raw in parts:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            if part not in value:
                return False, None
            value = value[part]
        elif isinstance(value, list | tuple):
            if not part.isdigit() or int(part) >= len(value):
                return False, None
            value = value[int(part)]
        else:
            return False, None
    return True, value


def moved(before: Any, after: Any, paths: Iterable[str]) -> list[str]:
    """The address fields (of ``paths``, and of ``after`` read the same way as ``before``)
    whose value differs between ``before`` and ``after``: where the call would go changed."""
    out: list[str] = []
    for p in dict.fromkeys(paths):
        if value_at(before, p) != value_at(after, p):
            out.append(p)
    return out


def field_name(pointer: str) -> str:
    """A JSON Pointer as a reason names it: ``#/to/0`` -> ``to[0]``, ``#/a/b`` -> ``a.b``."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.removeprefix("#/").split("/")]
    out = parts[0]
    for p in parts[1:]:
        out += f"[{p}]" if p.isdigit() else f".{p}"
    return out
