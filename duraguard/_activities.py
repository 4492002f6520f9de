"""Worker-side activities: one guardrail pass, one decision check, one model turn, the tools.

Everything a check needs that must not cross into workflow inputs (classifiers, tool schemas,
rule sheets, keys, API clients) lives in the :class:`Runtime` the plugin builds: a class per
concern, each with its activities as ``@activity.defn`` methods registered bound (the way
Temporal's contrib integrations hold theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._asker import MAX_ASK_KEYS, MAX_ASK_PRINTS, Asker
from ._byref import Seen
from ._checker import Checker
from ._model_caller import MAX_JUDGED_IN_MODEL_STEP, ModelCaller
from ._rest_reader import RestReader
from ._sealer import Sealer
from ._tool_step import tool_activity
from ._verifier import Verifier
from .approvals import ApproverKeys
from .conversations import ContextPolicy, ConversationStore, Window
from .guardrail import Resources
from .tools import Tool


class Runtime:
    """What the plugin lends its activities: the roles, and what they share."""

    def __init__(
        self,
        *,
        resources: Resources,
        tools: Mapping[str, Tool],
        models: Mapping[str, Any],
        approvers: ApproverKeys | None,
        accept_unsigned: bool,
        admission: Any = None,
        session_key: tuple[str, bytes] | None = None,
        conversations: ConversationStore | None = None,
        context: ContextPolicy | None = None,
    ) -> None:
        self.session_key = session_key
        self.conversations = conversations
        self.context = context or Window()
        self.resources = resources
        self.admission = admission
        self.tools = dict(tools)
        self.models = dict(models)
        self.approvers = approvers
        self.accept_unsigned = accept_unsigned
        self.seen = Seen()
        """What this worker's checks were sent (sent once, then by reference)."""
        self.checker = Checker(resources=resources, admission=admission, seen=self.seen)
        self.verifier = Verifier(approvers=approvers, accept_unsigned=accept_unsigned)
        self.asker = Asker(approvers=approvers, accept_unsigned=accept_unsigned)
        self.sealer = Sealer(session_key=session_key)
        self.rest_reader = RestReader()
        self.model_caller = ModelCaller(
            models=self.models,
            tools=self.tools,
            seen=self.seen,
            check=self.checker.check,
            conversations=conversations,
            context=self.context,
        )

    @property
    def checks_run(self) -> int:
        """How many guardrail passes this worker evaluated (replay evaluates none)."""
        return self.checker.checks_run

    def activities(self) -> list[Callable[..., Any]]:
        """Every activity the plugin registers: duraguard's own steps, then one per tool."""
        return [
            self.checker.check,
            self.verifier.verify_decision,
            self.verifier.verify_plan,
            self.asker.ask,
            self.sealer.seal,
            self.sealer.open,
            self.model_caller.model,
            self.rest_reader.read_rest,
            *(tool_activity(t, self.checker, self.conversations) for t in self.tools.values()),
        ]


__all__ = ["MAX_ASK_KEYS", "MAX_ASK_PRINTS", "MAX_JUDGED_IN_MODEL_STEP", "Runtime"]
