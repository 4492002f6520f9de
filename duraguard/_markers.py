"""The injection markers: prose in outside content that addresses an AI agent or a system, or
wraps orders for one, and the pressure an order puts on whoever reads it. Read by
:mod:`duraguard._noting` in every reading of a text (:func:`duraguard._noting.marker_readings`)
and in the unread rest of content read in part (:func:`duraguard._noting.marks_of_rest`)."""

from __future__ import annotations

import re
import unicodedata

from ._drawn import HIDDEN, LOOKALIKES

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
    r"previas|precedenti|sopra|anterioare|vorige|eerdere|voorgaande|bovenstaande|poprzedni\w*+|"
    r"wczesniejsz\w*+|powyzsz\w*+|predchozi\w*+|predeslych|tidigare|tidligere|foregaende|"
    r"ovanstaende|ovenstaende|aiemm\w*+|edelli\w*+|sebelumnya|terdahulu)"
)
"""The previous instructions, in the Latin-script languages an order is read in (an order in
Polish, Czech, Romanian, Swedish... is read with its accents dropped, as non-ASCII text is in
one of its readings and as the unread rest is)."""
_MORE_VERBS = (
    r"ignorati|negeer|vergeet|zignoruj(?:cie)?|ignoruj(?:cie|te)?|zapomnij(?:cie)?|zapomen(?:te)?|"
    r"ignorera|ignorer|glom|glem|unohda|ohita|abaikan|lupakan|hiraukan"
)
"""Ignore or forget in Romanian, Dutch, Polish, Czech, Swedish, Norwegian, Danish, Finnish and
Indonesian (French, Spanish, Italian, Portuguese and German are in :data:`_TO_AGENT`)."""
_MORE_LATIN = (
    r"\b(?:" + _MORE_VERBS + r")\b[^.\n]{0,60}\b" + _PREVIOUS + r"\b"
    # Turkish, Hindi written in Latin letters: (the) previous... instructions... ignore / forget
    r"|"
    r"\b(?:onceki|yukaridaki|pichle|pichhle|pichli)\b[^.\n]{0,30}?"
    r"\b(?:talimat|komut|yonerge|kural|instruction|nirdesh|rule|prompt|command)\w*+[^.\n]{0,20}?"
    r"\b(?:yok say(?:in|ın)?|gormezden gel(?:in)?|unut(?:un)?|dikkate alma(?:yin|yın)?|ignore|bhool|bhul|nazarandaz)\b"
    # Vietnamese, accents dropped: skip / forget... the instructions... before, above
    r"|\b(?:bo qua|phot lo|quen|lo di)\b[^.\n]{0,30}?\b(?:huong dan|chi dan|chi thi|menh lenh|lenh|quy tac)\b"
    r"[^.\n]{0,20}?\b(?:truoc|tren)\b"
)
"""Orders in more languages written in Latin letters, as a reading with the accents dropped has
them; searched only in a text that has one of :data:`MORE_LATIN_ANCHORS` (each alternative more
in :data:`_TO_AGENT` would slow the search of every text)."""
MORE_LATIN_ANCHORS = (
    "ignorati", "negeer", "vergeet", "zignoruj", "ignoruj", "zapomnij", "zapomen", "ignorer",
    "glom", "glem", "unohda", "ohita", "abaikan", "lupakan", "hiraukan", "onceki", "yukaridaki",
    "pichle", "pichhle", "pichli", "bo qua", "phot lo", "quen", "lo di",
)  # fmt: skip
"""A word that starts every match of :data:`MORE_LATIN_RE`, case folded (``ignorer`` also
starts ``ignorera``)."""
MORE_LATIN_RE = re.compile(_MORE_LATIN, re.I)


def folded(text: str) -> str:
    """``text`` (a pattern, or a page's unread rest) as :data:`ORDERS_RE` reads the unread rest
    of a page (:func:`duraguard._noting.marks_of_rest`): NFKD, marks dropped, case folded, then
    look-alike letters read as Latin. Hangul syllables become their jamo, ``й`` an ``и``, a
    Cyrillic ``о`` (or ``О``) a Latin ``o``. A pattern's syntax is ASCII and written in lower
    case (``\\b``, ``\\w``, never ``\\W``), so it stays the same pattern."""
    return folded_plain(HIDDEN.sub("", unicodedata.normalize("NFKD", text)))


def folded_plain(text: str) -> str:
    """:func:`folded` of a text already NFKD with what renders as nothing dropped (the unread
    rest as :func:`duraguard._noting.marks_of_rest` has it): case folded, look-alikes Latin."""
    return text.casefold().translate(LOOKALIKES)


_ORDERS = {
    "Cyrillic": (
        # Russian: ignore / forget / pay no attention to (the) previous... instructions
        r"(?:\b(?:про)?игнорируй(?:те)?|(?<!не )(?<!he )\bзабудь(?:те)?|\bне обращай(?:те)? внимания на)\b[^.\n]{0,40}?"
        r"(?:предыдущ|прежн|вышеуказанн|вышеизложенн|выше|ранее|все)\w*+[^.\n]{0,24}?"
        r"(?:инструкци|указани|команд|правил|промпт|запрос)"
        # Ukrainian: the same
        r"|(?:(?<!\w)(?:про)?ігноруй(?:те)?|(?<!не )\bзабудь(?:те)?|\bне звертай(?:те)? уваги на)\b[^.\n]{0,40}?"
        r"(?:попередн|вищенаведен|вищевказан|раніш|усі|всі)\w*+[^.\n]{0,24}?"
        r"(?:інструкці|вказівк|команд|правил|промпт|запит|настанов)",
        ("игнорир", "проигнорир", "забуд", "не обращай", "ігнору", "не звертай"),
    ),
    "Hangul": (
        # Korean: (the) previous / above / so far... instructions... ignore / forget
        r"(?:이전|앞|위|지금까지|기존)(?:의)?[^.\n]{0,24}?(?:지시|지침|명령|규칙|프롬프트)[^.\n]{0,24}?"
        r"(?:무시(?:하세요|하십시오|하시오|해\s?주세요|해라|하라|하고|해)|잊(?:으세요|으십시오|어\s?주세요|어라|어버려|어|고))",
        ("무시", "잊"),
    ),
    "Arabic": (
        # Arabic: ignore / forget / neglect... the instructions, orders... previous, above
        r"(?<!\w)[وف]?(?:تجاهل|انس|أهمل|اهمل|لا تلتفت إلى|لا تهتم ب)\w*+[^.\n]{0,30}?"
        r"(?:التعليمات|تعليمات|الأوامر|أوامر|الإرشادات|إرشادات|التوجيهات|توجيهات|القواعد|التعليمة)"
        r"[^.\n]{0,20}?(?:السابق|الماضي|أعلاه|القديم|المسبق)"
        # Persian: the previous... instructions... ignore / forget
        r"|(?:دستور|راهنما|قوانین|قواعد|فرمان)[^.\n]{0,40}?(?:قبلی|پیشین|بالا)[^.\n]{0,30}?"
        r"(?:نادیده|فراموش کن|اعتنا نکن)",
        ("تجاهل", "انس", "أهمل", "اهمل", "لا تلتفت", "لا تهتم", "نادیده", "فراموش", "اعتنا"),
    ),
    "Devanagari": (
        # Hindi: (the) previous / above... instructions, rules... ignore / forget
        r"(?:पिछल|पूर्व|ऊपर|पहले)[^.\n।]{0,40}?(?:निर्देश|आदेश|नियम|हिदायत|प्रॉम्प्ट)[^.\n।]{0,30}?"
        r"(?:अनदेखा|अनदेखी|नज़रअंदाज़|नजरअंदाज|नज़रअन्दाज़|नजरअन्दाज|भूल|उपेक्षा|ध्यान मत|ध्यान न)",
        ("अनदेख", "नज़रअंदाज़", "नजरअंदाज", "नज़रअन्दाज़", "नजरअन्दाज", "भूल", "उपेक्षा", "ध्यान"),
    ),
    "Hebrew": (
        # Hebrew: ignore / forget... the instructions... previous, above
        r"(?<!\w)ו?(?:התעלמ|התעלם|שכח|תשכח|אל תתייחס)\w*+[^.\n]{0,40}?"
        r"(?:הוראות|ההוראות|הנחיות|ההנחיות|הפקודות|פקודות|החוקים|הכללים)[^.\n]{0,24}?(?:הקודמ|שלמעלה|הישנ)",
        ("התעלם", "התעלמ", "שכח", "אל תתייחס"),
    ),
    "Greek": (
        # Greek: ignore / forget... previous, above... instructions (accents dropped when read)
        r"(?<!\w)(?:αγνοησ|ξεχ)\w*+[^.\n]{0,40}?(?:προηγουμεν|παραπανω)\w*+[^.\n]{0,24}?"
        r"(?:οδηγι|εντολ|κανον)",
        ("αγνοη", "αγνόη", "αγνοή", "ξεχ", "ξέχ"),
    ),
    "Thai": (
        # Thai (written without spaces): ignore / forget... the instructions... previous, above
        r"(?:เพิกเฉย|ละเว้น|ละเลย|ไม่ต้องสนใจ|ลืม)[^.\n]{0,20}?(?:คำสั่ง|คำแนะนำ|ข้อกำหนด|กฎ|คำชี้แจง)"
        r"[^.\n]{0,16}?(?:ก่อนหน้า|ข้างต้น|ก่อนนี้|เดิม)",
        ("เพิกเฉย", "ละเว้น", "ละเลย", "ไม่ต้องสนใจ", "ลืม"),
    ),
}  # fmt: skip
"""Orders to drop the previous instructions in scripts other than Latin, by script: the pattern
(as drawn; it is searched as :func:`folded` reads it, so case, accents, vowel points, look-alikes
and the Persian and Arabic forms of a letter are one), and its verbs (ignore, forget, pay no
attention), one of which every match has within its first 160 characters (a Korean, Persian,
Hindi or Thai order ends with it)."""
ORDERS_RE = re.compile("|".join(folded(p) for p, _ in _ORDERS.values()), re.I)
"""Every order of :data:`_ORDERS`, as the unread rest reads them (:func:`folded`)."""
ORDER_ANCHORS = tuple(dict.fromkeys(folded(w) for _, ws in _ORDERS.values() for w in ws))
"""The verbs of :data:`_ORDERS`, as the unread rest reads them."""
_ORDER_GATES = tuple(
    (
        re.compile("[" + "".join(sorted({c for w in forms for c in w if not c.isascii()})) + "]"),
        forms,
        re.compile(folded(pattern), re.I),
    )
    for pattern, forms in (
        (p, tuple(dict.fromkeys(f(w) for w in ws for f in (str.casefold, folded))))
        for p, ws in _ORDERS.values()
    )
)
"""For each script, a letter of its verbs, the verbs as drawn and folded, and its orders: a text
is searched for a script's verbs only where it has one of their letters, and for its orders only
where it has a verb (a page of Korean or Arabic prose costs a find per verb, not a search)."""

_TO_AGENT = (
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:instructions?|previous|prior|above|rules|guidelines|(?:system|original|initial|developer) prompts?)\b"
    r"|\b(?:ignorez|ignore|ignora|ignori|ignoriere|ignorier|oubliez|oublie|olvida|olvide|vergiss|vergessen sie|missachte|esque[cç]a|esquece|desconsidere|dimentica)\b[^.\n]{0,60}\b"
    + _PREVIOUS
    + r"\b"
    r"|(?:忽略|忽视|無視|无视|忘记|忘掉)[^。\n]{0,12}?(?:之前|以前|先前|上面|以上|前面|所有|全部)[^。\n]{0,8}?(?:指令|指示)"
    r"|(?:以前|前|上記|これまで)の(?:指示|指令)を(?:すべて|全て)?(?:無視|忘れ)"
    r"|\b(?:to|for|dear|attention|hey|hello|hi|you,?)\s+@?(?:the\s+|an?\s+|my\s+)?"
    + _MODELS
    + r"\b"
    r"|\b(?:the|an?|you)\s+(?:assistant|agent)\s+(?:should|must|will|needs?|has to|is)\b|\bassistants?\s*[:,]"
    r"|" + _BRACKETED + r"|" + _TOKENS + r"|\bthis is (?:an? )?(?:order|instruction|directive)\b"
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
WHOLE_WORDS = frozenset({"ai", "ais", "bot", "llm", "llms", "agent", "claude", "gemini", "chatbot"})
"""Anchors a match holds only as a whole word (``ai``, not ``airline``; ``bot``, not ``both``)."""


def addresses_agent(text: str) -> bool:
    """Whether ``text`` (one reading of it) addresses an AI agent: :data:`_TO_AGENT_RE`, an
    order in one of the more languages written in Latin letters (:data:`MORE_LATIN_RE`), or an
    order in a script other than Latin (:data:`ORDERS_RE`, looked for only in a text that is
    not ASCII, read folded: in every reading it would slow the search of every text by half)."""
    if _TO_AGENT_RE.search(text):
        return True
    ascii_only = text.isascii()
    low = text.lower() if ascii_only else text.casefold()
    latin = any(w in low for w in MORE_LATIN_ANCHORS)
    orders = [] if ascii_only else [o for letters, verbs, o in _ORDER_GATES if letters.search(low) and any(w in low for w in verbs)]  # fmt: skip
    if not (latin or orders):
        return False
    if not ascii_only:
        low = folded(text)  # as the unread rest reads it: accents, points and look-alikes too
    return bool(latin and MORE_LATIN_RE.search(low)) or any(o.search(low) for o in orders)


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
    "MORE_LATIN_ANCHORS",
    "MORE_LATIN_RE",
    "ORDERS_RE",
    "ORDER_ANCHORS",
    "TO_AGENT_ANCHORS",
    "WHOLE_WORDS",
    "_INSTRUCTS",
    "_TO_AGENT_RE",
    "addresses_agent",
    "folded",
    "folded_plain",
]
