"""A LangGraph run's messages judged: the person's (a message's text, or the text blocks of
its content) before the graph reads them, and the final answer (the last ``AIMessage``'s
text) before the run returns it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, convert_to_messages

from ._adapter import AgentGuard


async def judged_input(g: AgentGuard, value: Any, key: str) -> Any:
    """The input with the person's messages as the model may read them (a mask replaces them):
    a message's text, or the text blocks of its content (images and files go as they are)."""
    if not isinstance(value, Mapping) or key not in value:
        return value
    given = value[key]
    messages = convert_to_messages([given] if isinstance(given, str | tuple) else given)
    for i, m in enumerate(messages):
        if not isinstance(m, HumanMessage):
            continue
        if isinstance(m.content, str):
            used: Any = await g.prompt(m.content)
        else:
            blocks = list(m.content)
            at = [j for j, b in enumerate(blocks) if _text_of(b) is not None]
            if not at:
                continue
            texts = await g.prompt_texts([str(_text_of(blocks[j])) for j in at])
            for j, text in zip(at, texts, strict=True):
                b = blocks[j]
                blocks[j] = text if isinstance(b, str) else {**b, "text": text}
            used = blocks
        if used != m.content:
            messages[i] = m.model_copy(update={"content": used})
    return {**value, key: messages}


def _text_of(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and block.get("type") == "text":
        return str(block.get("text", ""))
    return None


async def judged_answer(g: AgentGuard, result: Any, key: str) -> tuple[Any, Any]:
    """The final answer (the last ``AIMessage``'s text) judged; the result with it replaced."""
    messages: list[Any] = list(result.get(key) or ()) if isinstance(result, Mapping) else []
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.tool_calls or "__interrupt__" in result:
        return None, result  # no answer (yet): the graph ended elsewhere, or was interrupted
    pr = await g.answer(last.content)
    if not pr.replaced:
        return last.content, result
    replaced = last.model_copy(update={"content": pr.value})
    return pr.value, {**result, key: [*messages[:-1], replaced]}


__all__ = ["judged_answer", "judged_input"]
