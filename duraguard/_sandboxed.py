"""A duraguard module run inside Temporal's workflow sandbox means a worker without the plugin.

``DuraguardPlugin`` passes duraguard through the sandbox as a whole (as it does pydantic and
cryptography): its modules are then imported once, outside it. A worker built without the plugin
imports them again inside the sandbox, where they fail on whatever the sandbox restricts
(``locale``, a thread pool) with an error that names neither duraguard nor the fix, and a workflow
task that fails so is retried for ever. This module is imported before anything else in duraguard
does work, and says what is wrong and what to do instead. It imports nothing from Temporal: it
reads the SDK's own flag where the SDK is loaded.
"""

from __future__ import annotations

import sys

NO_PLUGIN = (
    "duraguard is being imported inside Temporal's workflow sandbox: this worker was built "
    "without DuraguardPlugin, which passes duraguard through the sandbox and registers its "
    "activities, data converter, interceptors and failure types. Add it where the worker's "
    "client is made: Client.connect(address, plugins=[duraguard.DuraguardPlugin(...)]) (or "
    "Worker(..., plugins=[...])). A run whose workflow tasks failed for this goes on once a "
    "worker with the plugin takes it."
)


def refuse_sandboxed_import() -> None:
    """Raise ImportError naming the plugin when called in a module run inside the sandbox."""
    wf = sys.modules.get("temporalio.workflow")
    unsafe = getattr(wf, "unsafe", None)
    if unsafe is not None and unsafe.in_sandbox():
        raise ImportError(NO_PLUGIN)
