"""The worker-side registry the policy reads at check time: catalogue, tool kinds, withdrawn tools,
rule sheet.

Files are read again when they change (their modification time or size), so withdrawing a tool
or changing a rule takes effect on the next check without redeploying workflows; the verdict
that check records keeps replay deterministic. A file that is bad at construction raises; one
that turns bad later makes the policy refuse (deny, outcome partial) until it is fixed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from ...errors import ConfigurationError
from .catalogue import Catalogue, load_kinds, load_mapping
from .sheet import RuleSheet

T = TypeVar("T")
Source = str | Path | Mapping[str, Any]


class _Live(Generic[T]):
    """A value parsed from a file, parsed again when the file changes; or a fixed value."""

    def __init__(self, source: Any, parse: Callable[[Any], T]) -> None:
        self._parse = parse
        self._path = (
            Path(source) if isinstance(source, str | Path) and "\n" not in str(source) else None
        )
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._value = parse(source)
        if self._path is not None:
            self._stamp = self._stat()

    def _stat(self) -> tuple[int, int]:
        st = os.stat(self._path)  # type: ignore[arg-type]  # only called with a path
        return (st.st_mtime_ns, st.st_size)

    @property
    def version(self) -> tuple[int, int] | None:
        return self._stamp

    def get(self) -> T:
        if self._path is None:
            return self._value
        stamp = self._stat()
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    self._value = self._parse(self._path)
                    self._stamp = stamp
        return self._value


@dataclass(frozen=True)
class Snapshot:
    """What one check reads: the registry as it is now."""

    catalogue: Catalogue
    kinds: Mapping[str, str]
    withdrawn: frozenset[str]
    rules: RuleSheet


def _withdrawn(source: Any) -> frozenset[str]:
    if source is None:
        return frozenset()
    if isinstance(source, str | Path) and Path(source).suffix in (".yaml", ".yml", ".json", ".txt"):
        path = Path(source)
        if path.suffix == ".txt":
            return frozenset(
                line.strip()
                for line in path.read_text().splitlines()
                if line.strip() and not line.startswith("#")
            )
        import yaml

        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict):
            data = data.get("withdrawn", [])
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise ConfigurationError(
                f"withdrawn file {path} must list tool names, e.g. withdrawn: [old_refund]"
            )
        return frozenset(data)
    if isinstance(source, str):
        return frozenset({source})
    return frozenset(source)


class PolicyRegistry:
    """The catalogue, tool kinds, withdrawn tools and rule sheet, read live at check time.

    Args:
        rules: The rule sheet: a path (read again when it changes), YAML text or a mapping.
        tool_kinds: The tool kinds file (``{tool: read|write|send}``), which always wins.
        catalogue: A catalogue file or mapping (``tools: {name: {kind, agents, undo, order, ...}}``);
            merged over the tools registered in code, field by field.
        withdrawn: Tools withdrawn from use: names, or a file (YAML list or one name a line).
        tools: Tools registered in code (:class:`duraguard.tools.Tool`), when not given through
            ``Resources(tools=...)``.

    Raises:
        RuleSheetError: The rule sheet cannot be read (the message gives the line and the fix).
        ConfigurationError: Another file is missing or malformed.
    """

    def __init__(
        self,
        *,
        rules: Source | RuleSheet | None = None,
        tool_kinds: Source | None = None,
        catalogue: Source | None = None,
        withdrawn: Iterable[str] | str | Path | None = None,
        tools: Mapping[str, Any] | Iterable[Any] | None = None,
    ) -> None:
        self._rules: _Live[RuleSheet] = _Live(
            rules,
            lambda s: (
                s
                if isinstance(s, RuleSheet)
                else RuleSheet.load(s)
                if s is not None
                else RuleSheet()
            ),
        )
        self._kinds: _Live[dict[str, str]] = _Live(tool_kinds, load_kinds)
        self._file: _Live[dict[str, Any]] = _Live(
            catalogue, lambda s: load_mapping(s, "catalogue") if s is not None else {}
        )
        self._withdrawn_file: _Live[frozenset[str]] = _Live(withdrawn, _withdrawn)
        self._withdrawn: set[str] = set()
        if tools is not None and not isinstance(tools, Mapping):
            tools = {str(getattr(t, "name", t)): t for t in tools}
        self._tools: Mapping[str, Any] = dict(tools or {})
        self._cache: tuple[Any, Catalogue] | None = None
        self._lock = threading.Lock()
        self.snapshot({})  # a bad catalogue fails now, not on the first call

    def withdraw(self, *names: str) -> None:
        """Withdraw tools now (in this worker): every later call to them is refused."""
        with self._lock:
            self._withdrawn.update(names)

    def restore(self, *names: str) -> None:
        """Serve withdrawn tools again (only those withdrawn with :meth:`withdraw`)."""
        with self._lock:
            self._withdrawn.difference_update(names)

    def snapshot(self, code_tools: Mapping[str, Any]) -> Snapshot:
        """The registry as it is now, merged with the tools registered in code on this worker."""
        file = self._file.get()
        tools = {**self._tools, **code_tools}
        key = (self._file.version, id(file), tuple((n, id(t)) for n, t in tools.items()))
        cached = self._cache
        if cached is None or cached[0] != key:
            cached = (key, Catalogue.build(tools, file))
            self._cache = cached
        return Snapshot(
            catalogue=cached[1],
            kinds=self._kinds.get(),
            withdrawn=frozenset(self._withdrawn) | self._withdrawn_file.get(),
            rules=self._rules.get(),
        )


def policy_resources(**options: Any) -> dict[str, Any]:
    """``Resources(extra=policy_resources(rules="rules.yaml", ...))``: the registry under ``policy``."""
    return {"policy": PolicyRegistry(**options)}
