"""Tool results kept beside a conversation, so the model step that follows is sent their digests.

A tool step's result is recorded in history once, as the step's output. Without a store the
model step that follows is sent it again, inside the new messages of its turn: every result
would be in history twice, and encoded twice in workflow code (in the run and in every replay).
Where the run's workers share a :class:`~duraguard.conversations.ConversationStore`, the tool
step keeps the result there as the model will read it (:meth:`ConversationStore.keep_result`),
and the model step is sent only its digest (:attr:`duraguard._wire.ModelRequest.kept`): the
worker finds the text, checks that it has that digest, and puts it back before anything reads
the messages. Where it cannot (a store that keeps no results, one wiped, a row that does not
match) the step calls no model and stores nothing (:attr:`ModelResponse.results_missing`), and
the workflow sends the results in full: a miss costs a step, never a result.

A result is kept per (workflow run, call, attempt): the digest lives in history only (encoded
by the client's codec there), so a store's rows name no digest of a plaintext an encrypted
deployment would not otherwise show; the worker picks, among the attempts of a call, the one
whose text has the digest the workflow sent. By run, not by workflow id: a workflow id may be
used again, and its calls are numbered from ``c1`` again; the model step a result is kept for is
always in the run of its tool step (a run continued as new sends its carried results in full).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ._byref import digest

KEPT_FROM = 512
"""The shortest result (characters of canonical JSON) a tool step keeps in the store: a shorter
one travels in full, as cheap as its digest and a read."""

KEPT_IN_MEMORY = 32 * 1024 * 1024
"""Characters of kept results a worker also holds in memory, latest first: the model step that
follows a tool step on the same worker (most do) reads none from the database."""


class RecentResults:
    """The results this process kept lately, by (run, call): every attempt's text."""

    def __init__(self, budget: int = KEPT_IN_MEMORY) -> None:
        self.budget = budget
        self._texts: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
        self._size = 0

    def keep(self, run_id: str, call_id: str, text: str) -> None:
        if len(text) > self.budget:
            return
        texts = self._texts.setdefault((run_id, call_id), [])
        if text not in texts:
            texts.append(text)
            self._size += len(text)
        self._texts.move_to_end((run_id, call_id))
        while self._size > self.budget:
            _, dropped = self._texts.popitem(last=False)
            self._size -= sum(len(t) for t in dropped)

    def matching(self, run_id: str, wanted: Mapping[str, str]) -> dict[str, str]:
        """The texts held of the calls ``wanted`` names (call id: digest) that have the digest."""
        return matching(
            ((call_id, t) for call_id in wanted for t in self._texts.get((run_id, call_id), ())),
            wanted,
        )


def matching(found: Iterable[tuple[str, str]], wanted: Mapping[str, str]) -> dict[str, str]:
    """Of ``found`` (call id, text), the text of each call ``wanted`` names whose digest is the
    one it names (another attempt's, or a row changed since, is not)."""
    out: dict[str, str] = {}
    for call_id, text in found:
        if call_id not in out and wanted.get(call_id) == digest(text):
            out[call_id] = text
    return out


__all__ = ["KEPT_FROM", "KEPT_IN_MEMORY", "RecentResults", "matching"]
