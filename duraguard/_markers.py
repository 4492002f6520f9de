"""The injection markers: prose in outside content that addresses an AI agent or a system, or
wraps orders for one, and the pressure an order puts on whoever reads it. Read by
:mod:`duraguard._noting` in every reading of a text (:func:`duraguard._noting.marker_readings`)
and in the unread rest of content read in part (:func:`duraguard._noting.marks_of_rest`)."""

from __future__ import annotations

import re

from ._orders import WHOLE_WORDS, folded, folded_plain, other_orders
from ._orders_english import drops_in_other_words

_MODELS = r"(?:ai|ais|llms?|gpt[\w.-]*|chatgpt|claude|gemini|copilot|chatbot|language model|assistant|agent|bot)"
_BRACKETED = (
    r"<\s*+/?\s*+(?:information|instructions?|system|important)\s*+>"
    r"|\[\s*+(?:system|admin|instructions?)\s*+\]"
)
"""Orders wrapped in tags or brackets (``<INFORMATION>``, ``[SYSTEM]``); the white space in them
possessive (a ``<`` before 20,000 spaces took 10 s to try: every split of the run between two
optional runs of it)."""
_TOKENS = (
    r"<\|/?[a-z0-9_\u2581]{1,32}\|>|\[\s*+/?\s*+(?:inst|system_prompt|tool_calls|available_tools)\s*+\]"
    r"|<</?sys>>|<\s*+/?\s*+(?:start_of_turn|end_of_turn|system[ _-]?prompt)\s*+>"
)
"""The role and turn tokens of chat templates, written as a tokenizer reads them
(``<|im_start|>``, ``<|eot_id|>``, DeepSeek's ``<｜begin▁of▁sentence｜>`` once folded, ``[INST]``,
``[SYSTEM_PROMPT]``, ``<<SYS>>``, ``<start_of_turn>``, ``<system_prompt>``): a page has them only
to speak to a model in its own markup (``f <| x |>`` in Elm, ``<<SYS >>`` in a shell are not)."""
_PREVIOUS = (
    r"(?:pr[ée]c[ée]dentes?|ant[ée]rieures?|ci-dessus|vorherigen|bisherigen|obigen|anteriores|"
    r"previas|precedenti|sopra)"
)


_DROP_ORDERS = (
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:instructions?|previous|prior|above|rules|guidelines|(?:system|original|initial|developer) prompts?)\b"
    r"|\b(?:ignorez|ignore|ignora|ignori|ignoriere|ignorier|oubliez|oublie|olvida|olvide|vergiss|vergessen sie|missachte|esque[cç]a|esquece|desconsidere|dimentica)\b[^.\n]{0,60}\b"
    + _PREVIOUS
    + r"\b"
    r"|(?:忽略|忽视|無視|无视|忘记|忘掉)[^。\n]{0,12}?(?:之前|以前|先前|上面|以上|前面|所有|全部)[^。\n]{0,8}?(?:指令|指示)"
    r"|(?:以前|前|上記|これまで)の(?:指示|指令)を(?:すべて|全て)?(?:無視|忘れ)"
    r"|" + _BRACKETED + r"|" + _TOKENS
)
"""The orders to drop the instructions, and orders wrapped in tags or tokens: what reads as an
order to an agent wherever it stands, texts read side by side included
(:func:`duraguard._adjacent.beside_marks`); not the forms that address one by name ("hi AI"),
which two fields side by side make by chance (a "To" header beside "AI Team")."""
_DROP_ORDERS_RE = re.compile(_DROP_ORDERS, re.I)
DROP_ANCHORS = (
    "ignor", "disregard", "forget", "overrid", "oubli", "olvid", "vergiss", "vergessen",
    "missacht", "esquec", "desconsider", "dimentic", "<", "[", "忽", "無視", "无视", "忘",
)  # fmt: skip
"""What every match of :data:`_DROP_ORDERS` holds (case folded): a text without any is not
searched."""
_TO_AGENT = (
    _DROP_ORDERS
    + r"|\b(?:to|for|dear|attention|hey|hello|hi|you,?)\s+@?(?:the\s+|an?\s+|my\s+)?"
    + _MODELS
    + r"\b"
    r"|\b(?:the|an?|you)\s+(?:assistant|agent)\s+(?:should|must|will|needs?|has to|is)\b|\bassistants?\s*[:,]"
    r"|\bthis is (?:an? )?(?:order|instruction|directive)\b"
)
_TO_AGENT_RE = re.compile(_TO_AGENT, re.I)


TO_AGENT_ANCHORS = (
    "ignore", "disregard", "forget", "override", "llm", "llms", "gpt", "chatgpt", "claude",
    "gemini", "copilot", "chatbot", "language model", "assistant", "agent", "bot", "ai", "ais",
    "this is", "ignora", "ignori", "oubli", "olvid", "vergiss", "vergessen sie", "missachte",
    "esquec", "desconsidere", "dimentica", "忽略", "忽视", "無視", "无视", "忘记", "忘掉",
    "の指示を", "の指令を",
)  # fmt: skip
"""A word that starts every match of :data:`_TO_AGENT_RE` (lower case, as the unread rest is
read: accents dropped), or lies within reach of its start, but its bracketed forms and tokens,
which :data:`duraguard._noting._BRACKETS` and :data:`duraguard._noting._TOKEN_RE` match."""


def drops_orders(text: str, *, other_words: bool = True) -> bool:
    """Whether ``text`` (one reading of it) holds an order to drop the instructions, in English
    (in other words and misspelt too: :func:`duraguard._orders_english.drops_in_other_words`),
    another language (:func:`duraguard._orders.other_orders`) or wrapped in tags or tokens.
    ``other_words=False``: not in other words (a caller that reads those in another reading)."""
    low = text.casefold()
    return (
        (any(a in low for a in DROP_ANCHORS) and bool(_DROP_ORDERS_RE.search(text)))
        or other_orders(text)
        or (other_words and drops_in_other_words(text) is not False)
    )


def addresses_agent(text: str) -> bool:
    """Whether ``text`` (one reading of it) addresses an AI agent: :data:`_TO_AGENT_RE`, an
    order in another language (:func:`duraguard._orders.other_orders`), or one in other words
    (:func:`duraguard._orders_english.drops_in_other_words`)."""
    return (
        bool(_TO_AGENT_RE.search(text))
        or other_orders(text)
        or drops_in_other_words(text) is not False
    )


"""Prose that addresses an AI agent or a system ("to you, GPT-4", "note to the AI"), or wraps
orders for one (``<INFORMATION>``, "[SYSTEM]", "ignore previous instructions"); not prose
that only mentions AI."""
_INSTRUCTS = re.compile(
    _TO_AGENT + r"|\b(?:ai|llm|gpt|chatgpt|claude|gemini|chatbot|language model)\b"
    r"|\b(?:dear|attention|hey|hello|hi|note to(?: the)?|message for(?: the)?)\s+(?:agent|assistant|bot)\b"
    r"|\b(?:system|admin|administrator|security|compliance|it)\s+(?:notice|message|alert|update|instruction|override|request|team)\b"
    r"|\b(?:new|updated|additional|important|hidden)\s+(?:task|instructions?)\b"
    r"|\bbefore\s+(?:you|completing|continuing|finishing|proceeding|answering|doing)\b"
    r"|\b(?:do not|don['\u2019\u02bc\uff07`]t|never)\s+(?:tell|inform|mention|notify|show|ask)\b"
    r"|\b(?:you must|you are required|you have to|you need to|make sure (?:to|you))\b"
    r"|\bimportant!|\burgent\b|\bimmediately\b",
    re.I,
)
"""Injection markers: :data:`_TO_AGENT`, a mention of an AI or an agent, and the pressure an
order puts on whoever reads it (a system notice, urgency, "you must", "do not tell")."""


__all__ = [
    "DROP_ANCHORS",
    "TO_AGENT_ANCHORS",
    "WHOLE_WORDS",
    "_INSTRUCTS",
    "_TO_AGENT_RE",
    "addresses_agent",
    "drops_orders",
    "folded",
    "folded_plain",
]
