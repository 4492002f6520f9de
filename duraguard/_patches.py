"""Which of duraguard's behaviours a run started with: asked once per run, from patch markers.

A behaviour that changes the commands a run gives (a step more or less, a search attribute
upsert) must not change under a run already recorded: its replay would no longer match. Each
such change is a patch; a new run records one marker, the newest, which implies every older one,
and a run replays with the behaviours its marker names (or those of a run started before any).

The newest marker also records whether the run upserts duraguard's search attributes, so turning
``DuraguardPlugin(search_attributes=...)`` on or off changes new runs only: a run keeps the
choice it started with, whichever worker replays it.

Asked when the run's session is made, its first use of duraguard (before any of its steps), so
that a replay asks in the same workflow task as the run did. A worker holding duraguard's patches
back in a rolling upgrade (the SDK's ``patch_activation_callback``) holds every ``duraguard.``
patch id, and its new runs then behave as before any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

from ._config import WorkflowConfig

INLINE_BY_DEFAULT = "duraguard.inline-by-default"
"""Check mode ``auto`` judges a lone call inside its tool step (level 1)."""
ANSWER_IN_MODEL_STEP = "duraguard.answer-in-model-step"
"""``agent_loop`` judges the prompt and a final answer inside model steps (level 2)."""
MASK_BEFORE_HISTORY = "duraguard.mask-before-history"
"""Values a guardrail may mask are judged before any step records them (level 3, and the two
before it); the run does not upsert search attributes."""
MASK_BEFORE_HISTORY_SA = "duraguard.mask-before-history+search-attributes"
"""The same, and the run upserts duraguard's search attributes."""
PASSES = "duraguard.passes+mask-before-history"
"""Level 3 in a run that started under check mode ``local`` or ``activity``: every call keeps a
pass of its own (so a worker later set to ``auto`` does not judge this run's calls in their
tool steps); no search attributes."""
PASSES_SA = "duraguard.passes+mask-before-history+search-attributes"
"""The same, with search attributes."""

RESULT_KEYS = "duraguard.result-keys+mask-before-history"
"""Level 4: level 3, and tool steps send back their results' keys (:mod:`duraguard._result_keys`),
which workflow code notes instead of reading each result (and a replay reads back); a worker of
an earlier version could read neither a tool step asking for them nor one that sent them."""
RESULT_KEYS_SA = "duraguard.result-keys+mask-before-history+search-attributes"
"""The same, and the run upserts duraguard's search attributes."""
RESULT_KEYS_PASSES = "duraguard.result-keys+passes+mask-before-history"
"""Level 4 in a run that started under check mode ``local`` or ``activity``."""
RESULT_KEYS_PASSES_SA = "duraguard.result-keys+passes+mask-before-history+search-attributes"
"""The same, with search attributes."""

KEPT_RESULTS = "duraguard.kept-results+result-keys+mask-before-history"
"""Level 5: level 4, and with a conversation store a tool step keeps its result there for the
model step that follows, which is sent only its digest (:mod:`duraguard._kept_results`); a
worker of an earlier version could read neither the tool step's nor the model step's input."""
KEPT_RESULTS_SA = "duraguard.kept-results+result-keys+mask-before-history+search-attributes"
"""The same, and the run upserts duraguard's search attributes."""
KEPT_RESULTS_PASSES = "duraguard.kept-results+result-keys+passes+mask-before-history"
"""Level 5 in a run that started under check mode ``local`` or ``activity``."""
KEPT_RESULTS_PASSES_SA = (
    "duraguard.kept-results+result-keys+passes+mask-before-history+search-attributes"
)
"""The same, with search attributes."""

REST_IN_STEPS = "duraguard.rest-in-steps+kept-results+result-keys+mask-before-history"
"""Level 6: level 5, and a tool step reads the unread rest of a result too large to note whole
(the flags it carries, :func:`duraguard._noting.marks_of_rest`) and sends them with its keys,
which workflow code takes instead of reading the rest itself (:mod:`duraguard._result_keys`): a
worker of an earlier version could read neither the tool step's input nor take its output."""
REST_IN_STEPS_SA = (
    "duraguard.rest-in-steps+kept-results+result-keys+mask-before-history+search-attributes"
)
"""The same, and the run upserts duraguard's search attributes."""
REST_IN_STEPS_PASSES = "duraguard.rest-in-steps+kept-results+result-keys+passes+mask-before-history"
"""Level 6 in a run that started under check mode ``local`` or ``activity``."""
REST_IN_STEPS_PASSES_SA = (
    "duraguard.rest-in-steps+kept-results+result-keys+passes+mask-before-history+search-attributes"
)
"""The same, with search attributes."""

REST_BOUND = "duraguard.rest-bound"
"""Asked on its own, only where an adapter's result is past ``_after.MAX_REST_READ_CHARS``: such
a result is flagged unread with no step. A run recorded before (or with the patch held back)
has the local activity read it, as it did: its marker stays where its replay looks for it."""

OUTSIDE_ON_WORKER = "duraguard.outside-on-worker"
"""Asked on its own, only where an adapter's result read as outside content (labelled, or its
call given values from outside content) is noted whole but is at least
``_outside_keys.NOTED_ON_THE_WORKER`` characters: the local activity that reads a result's rest
notes it as outside content (:mod:`duraguard._outside_keys`), where workflow code read it
before. A run recorded before (or with the patch held back) reads it in workflow code."""

_NEWEST = (
    # (patch id, level, judged in steps, search attributes), the order a replay probes them in:
    # the newest level first, so a new run asks its newest marker first
    (REST_IN_STEPS_SA, 6, True, True),
    (REST_IN_STEPS, 6, True, False),
    (REST_IN_STEPS_PASSES_SA, 6, False, True),
    (REST_IN_STEPS_PASSES, 6, False, False),
    (KEPT_RESULTS_SA, 5, True, True),
    (KEPT_RESULTS, 5, True, False),
    (KEPT_RESULTS_PASSES_SA, 5, False, True),
    (KEPT_RESULTS_PASSES, 5, False, False),
    (RESULT_KEYS_SA, 4, True, True),
    (RESULT_KEYS, 4, True, False),
    (RESULT_KEYS_PASSES_SA, 4, False, True),
    (RESULT_KEYS_PASSES, 4, False, False),
    (MASK_BEFORE_HISTORY_SA, 3, True, True),
    (MASK_BEFORE_HISTORY, 3, True, False),
    (PASSES_SA, 3, False, True),
    (PASSES, 3, False, False),
)


@dataclass(frozen=True)
class Features:
    """What a run does, as it started."""

    level: int = 0
    """The newest patch it carries: 0 (none) to 6 (:data:`REST_IN_STEPS`)."""
    search_attributes: bool = False
    """Whether it upserts duraguard's search attributes."""
    in_steps: bool = True
    """Whether its calls, prompt and answers may be judged inside tool and model steps (false
    for a run that started under check mode ``local`` or ``activity``)."""


def ask(config: WorkflowConfig) -> Features:
    """The features of the running workflow (one marker in a new run)."""
    if not workflow.in_workflow():
        return Features()
    on = config.search_attributes
    in_steps = config.check_mode in ("auto", "inline")
    # A new run asks only the marker its worker's settings choose; a replay probes each, and
    # finds the one the run recorded (a patch asked while replaying records nothing).
    replaying = workflow.unsafe.is_replaying()
    for patch, level, steps, sa in _NEWEST:
        if (replaying or (steps, sa) == (in_steps, on)) and workflow.patched(patch):
            return Features(level, sa, steps)
    # Started before (or held back): the older markers, asked as they were then.
    if not in_steps:
        return Features(0, on, False)
    if workflow.patched(ANSWER_IN_MODEL_STEP):
        return Features(2, on)
    return Features(1 if workflow.patched(INLINE_BY_DEFAULT) else 0, on)


__all__ = [
    "ANSWER_IN_MODEL_STEP",
    "INLINE_BY_DEFAULT",
    "KEPT_RESULTS",
    "KEPT_RESULTS_PASSES",
    "KEPT_RESULTS_PASSES_SA",
    "KEPT_RESULTS_SA",
    "MASK_BEFORE_HISTORY",
    "MASK_BEFORE_HISTORY_SA",
    "OUTSIDE_ON_WORKER",
    "PASSES",
    "PASSES_SA",
    "REST_BOUND",
    "REST_IN_STEPS",
    "REST_IN_STEPS_PASSES",
    "REST_IN_STEPS_PASSES_SA",
    "REST_IN_STEPS_SA",
    "RESULT_KEYS",
    "RESULT_KEYS_PASSES",
    "RESULT_KEYS_PASSES_SA",
    "RESULT_KEYS_SA",
    "Features",
    "ask",
]
