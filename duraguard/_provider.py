"""The model port, worker side: what a model provider implements, and what it reads of a request.

Workflow code names a model as ``provider:model`` (``"openai:gpt-4.1"``, ``"scripted:refund"``);
a provider reads the part after the colon itself (:func:`model_name`). The providers themselves
are in :mod:`duraguard.models` (a scripted model) and :mod:`duraguard._openai_chat`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from temporalio.exceptions import ApplicationError

from ._wire import ModelRequest, ModelResponse
from .errors import ModelRequestRefused, ModelUnavailable
from .tools import Tool

MODEL_UNAVAILABLE = ModelUnavailable.type_name
"""Error type of a transient provider failure (Temporal retries it)."""
MODEL_REQUEST_REFUSED = ModelRequestRefused.type_name
"""Error type of a failure retrying cannot fix: a bad key, a bad request, an unknown script."""


def split_model(model: str) -> tuple[str, str]:
    """Split ``"provider:model"`` into its provider and model name (the name may hold colons).

    A string without a colon is a provider with an empty model name.
    """
    provider, _, name = model.partition(":")
    return provider, name


def model_name(request: ModelRequest) -> str:
    """The part of ``request.model`` after the provider, e.g. ``gpt-4.1`` for ``openai:gpt-4.1``."""
    return split_model(request.model)[1]


def refused(message: str) -> ApplicationError:
    """A model failure Temporal must not retry: the message says what to fix."""
    return ModelRequestRefused(message)


class Model(ABC):
    """A model provider: reads the conversation and answers, proposes tool calls, or both."""

    @abstractmethod
    async def complete(self, request: ModelRequest, tools: Sequence[Tool]) -> ModelResponse:
        """Answer ``request``.

        Args:
            request: The whole request; ``request.model`` is ``provider:model`` and the provider
                reads its own model name from it with :func:`model_name`.
            tools: The worker's :class:`Tool` objects for the names in ``request.tools``, in the
                same order, so the provider can describe them to the model.

        Raises:
            ApplicationError: ``non_retryable=True`` when retrying cannot help (a bad key, a
                request the provider refuses); anything else is treated as transient.
        """


def turn_index(request: ModelRequest) -> int:
    """Which turn this is: the loop's count where it sent one, else the number of assistant
    messages already in the conversation."""
    if request.turn is not None:
        return request.turn
    return sum(1 for m in request.messages if m.role == "assistant")
