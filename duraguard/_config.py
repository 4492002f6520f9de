"""Per-worker settings made visible to workflow code, deterministically, through an interceptor
(:class:`duraguard._config_interceptor.ConfigInterceptor`, which hands each run its settings)."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkflowConfig:
    """What the plugin tells workflow code: the same on every worker built from one plugin."""

    check_mode: str = "auto"
    search_attributes: bool = False
    admission: bool = False
    """True where the worker gates tools by agent or principal: admission steps then always run."""
    max_subject_bytes: int = 1_048_576
    """The largest value one check may judge (canonical JSON); a larger one is refused in
    workflow code before any step is scheduled (a step's input is at most 2 MiB)."""
    conversations: bool = False
    """True where the workers keep agent conversations in a ConversationStore: ``agent_loop``
    then sends each model step only what is new."""
    can_seal: bool = False
    """True where the workers hold a session key, so a loop may continue-as-new."""
    undo: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = ()
    """(tool, the tool that undoes it, how the undo's arguments map onto the step's args or
    result), from the tools given to the plugin: how a call finds the step it reverses."""


DEFAULT = WorkflowConfig()

_CONFIGS: weakref.WeakKeyDictionary[Any, WorkflowConfig] = weakref.WeakKeyDictionary()
"""Per run, keyed by the run's own event loop (the SDK runs each workflow run on a loop of its
own): nothing is hung on the user's workflow object, and an entry goes with its run."""


def current() -> WorkflowConfig:
    """The plugin's settings for the running workflow (defaults without the plugin)."""
    return _CONFIGS.get(asyncio.get_running_loop(), DEFAULT)


def installed() -> bool:
    """Whether the plugin's interceptor handed this run its settings (a worker built with it)."""
    return asyncio.get_running_loop() in _CONFIGS


def bind(run: Any, config: WorkflowConfig) -> None:
    """Hand ``config`` to the run whose event loop (the SDK's runtime for it) is ``run``: the
    plugin's workflow interceptor does, before the workflow's own code runs
    (:class:`duraguard._config_interceptor.ConfigInterceptor`)."""
    _CONFIGS[run] = config
