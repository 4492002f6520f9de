"""Orders to drop the previous instructions in the languages besides English, French, German,
Spanish, Italian, Portuguese, Chinese and Japanese (whose orders are in
:data:`duraguard._markers._TO_AGENT`): in scripts other than Latin (:data:`_ORDERS`) and in more
languages written in Latin letters (:mod:`duraguard._orders_latin`).

Every text is read folded (:func:`folded`: case, accents, vowel points, look-alike letters and a
letter's Persian and Arabic forms made one), and each pattern is searched only around its verbs
(:func:`in_windows`), read whole as in the unread rest of a page, so both read the same and a
page of prose costs a find per verb, not a search. A verb is the imperative (``تجاهلوا``,
``αγνοήστε``, ``nadideh begir``) where the language has one apart from its other forms, not
after a negation ("don't forget the previous instructions" is no order to drop them), and an
order names the instructions (or rules, commands, prompts), not only "the previous one".
Known false alarms, kept where telling them apart would let orders through: where the
imperative is written as the past (Arabic ``تجاهل``, Hebrew ``התעלם``, Greek ``αγνόησε``), news
that someone ignored the previous instructions is marked where the verb starts a sentence, an
item or a quote and the instructions follow it or an adverb (a subject between them tells news);
Vietnamese has no tense, and its news is marked wherever it is ("the government skipped the
rules before"); Thai "need not follow the instructions above" after "you" or a Latin word (a
tutorial's "Mac users need not..."); "forgot the previous instruction? read the manual" in
Hebrew. A shell tutorial's "skip the command above" is not an order (Vietnamese ``lệnh trên``;
Turkish ``komutu`` in the singular, or ``komutları`` near a terminal, unless all are dropped or
another order follows: "... and type this in the terminal").
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

from ._drawn import HIDDEN, LOOKALIKES
from ._orders_latin import MORE_LATIN_ANCHORS, MORE_LATIN_GATE, MORE_LATIN_RE, MORE_LATIN_REACH

MAX_REST_SCANNED = 64 * 1024
"""Characters around anchor words the patterns read in a text; past that, the text is flagged
as if they had matched (fail closed: only its own values get stricter)."""
MAX_ANCHORS_SEEN = 50_000
"""Anchor words found (whole or not) before the scan stops and flags the content (a megabyte of
``aiaiai`` is not read one find at a time)."""
WHOLE_WORDS = frozenset(
    {
        "ai",
        "ais",
        "bot",
        "llm",
        "llms",
        "agent",
        "claude",
        "gemini",
        "chatbot",
        "unut",
        "unutun",
        "unutunuz",
        "uyma",
    }
    | {p + v + s for p in ("", "و", "ف") for v in ("انس",) for s in ("", "ي", "وا")}
)
"""Anchors a match holds only as a whole word (``ai``, not ``airline``; ``bot``, not ``both``;
Turkish ``unut``, not ``unutmayın``, "do not forget"; Arabic ``انس``, "forget", not ``انسان``,
"human")."""
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\u1100-\u11ff\uac00-\ud7af]")
"""Scripts written without spaces between words (Thai, Japanese, Chinese) or whose verbs follow
a particle (Korean): an anchor in them starts anywhere."""


def folded(text: str) -> str:
    """``text`` (a pattern, or a text) as the orders are read: NFKD, marks dropped, case folded,
    then look-alike letters read as Latin. Hangul syllables become their jamo, ``й`` an ``и``, a
    Cyrillic ``о`` (or ``О``) a Latin ``o``. A pattern's syntax is ASCII and written in lower
    case (``\\b``, ``\\w``, never ``\\W``), so it stays the same pattern."""
    return folded_plain(HIDDEN.sub("", unicodedata.normalize("NFKD", text)))


def folded_plain(text: str) -> str:
    """:func:`folded` of a text already NFKD with what renders as nothing dropped (the unread
    rest as :func:`duraguard._noting.marks_of_rest` has it): case folded, look-alikes Latin."""
    return text.casefold().translate(LOOKALIKES)


_DRAWN = "\\doilzзбчʒ|\u3007"
_DRAWN_RUN = re.compile(rf"(?<![^\W\d_])(?<![{_DRAWN}])[{_DRAWN}]++(?![^\W\d_])")
"""A whole run of digits and letters drawn like digits, not inside a word (each run read once:
linear however long)."""
_BY_LETTERS = re.compile("[збчʒ\u3007]")
_AS_DIGITS = str.maketrans("oilzзбчʒ|\u3007", "0112364310")
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
"""A digit of another script (Arabic-Indic, Devanagari, ...)."""
_DRAWN_LETTERS = re.compile(r"(?<=[a-z])[01345]+(?=[a-z])")
_AS_LETTERS = str.maketrans("01345", "oieas")


def drawn_digits(text: str) -> str:
    """``text`` (folded, :func:`folded`) with its digits as a model reads them: of another
    script as ASCII ("٢٠٢٤"), and the letters drawn like digits in a run of digits as the digits
    ("2o24", a Latin or Cyrillic o; "1з", a Cyrillic ze for 3; "2〇24"; "zoz4", a z for 2; "|3";
    "1ʒ", an ezh for 3; "із", with no digit but one drawn by a Cyrillic letter)."""
    if not text.isascii():
        text = _OTHER_DIGIT.sub(lambda m: str(unicodedata.digit(m.group())), text)
    return _DRAWN_RUN.sub(_as_digits, text)


def _as_digits(m: re.Match[str]) -> str:
    """A run of :data:`_DRAWN_RUN` as digits where it holds a digit ("2o24", "|3"), or two or
    more characters with one drawn by a letter of another script ("із"); else as it is."""
    run = m.group()
    if any(c.isdigit() for c in run) or (len(run) > 1 and _BY_LETTERS.search(run)):
        return run.translate(_AS_DIGITS)
    return run


def drawn_letters(text: str) -> str:
    """``text`` (folded) with the digits drawn for letters inside a word read as the letters
    ("c0ntracts", "contr4cts", "f1le")."""
    return _DRAWN_LETTERS.sub(lambda m: m.group().translate(_AS_LETTERS), text)


def merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (start, end) in order, those that touch or overlap made one, whatever order
    they were found in."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def in_windows(
    low: str,
    anchors: tuple[str, ...],
    pattern: re.Pattern[str],
    reach: tuple[int, int],
    *,
    words: bool = False,
) -> bool | None:
    """Whether ``pattern`` matches ``low`` where one of ``anchors`` is (a match starting up to
    ``reach[0]`` characters before it and ending up to ``reach[1]`` after); ``None`` where that
    cannot be read within :data:`MAX_REST_SCANNED` and :data:`MAX_ANCHORS_SEEN` (the caller
    fails closed). An anchor counts where a word starts (no letter before it): one in ASCII
    always, one in another script where ``words`` (not in :data:`_UNSPACED` scripts)."""
    before, after = reach
    spans: list[tuple[int, int]] = []
    seen = covered = 0
    for a in anchors:
        whole = a in WHOLE_WORDS
        word = a[0].isalnum() and (a[0].isascii() or (words and not _UNSPACED.match(a)))
        at = low.find(a)
        while at != -1:
            seen += 1
            if seen > MAX_ANCHORS_SEEN or covered > 4 * MAX_REST_SCANNED:
                return None
            end = at + len(a)
            if (at == 0 or not word or not low[at - 1].isalnum()) and not (
                whole and end < len(low) and low[end].isalnum()
            ):
                spans.append((max(0, at - before), end + after))
                covered += before + len(a) + after
            at = low.find(a, end)
    merged = merged_spans(spans)
    if sum(end - start for start, end in merged) > MAX_REST_SCANNED:
        return None
    return any(pattern.search(low, start, end) for start, end in merged)


def _gr(word: str) -> str:
    """A Greek word as a pattern that also reads the Latin letters its capitals are drawn like
    (``AΓNOHΣTE``: a Latin N, H, T, E)."""
    like = {
        "ε": "[εe]",
        "η": "[ηh]",
        "ν": "[νn]",
        "τ": "[τt]",
        "χ": "[χx]",
        "μ": "[μm]",
        "υ": "[υy]",
    }
    return "".join(like.get(c, c) for c in word)


_AR_NOUNS = "التعليمات|تعليمات|التعليمة|الأوامر|أوامر|الإرشادات|إرشادات|التوجيهات|توجيهات|القواعد"
_HI_NOUNS = "निर्देश|आदेश|नियम|हिदायत|प्रॉम्प्ट|इंस्ट्रक्शन"
_HI_DO = r"(?:ें|ो|िए|िये|ना|\s+दें|\s+दो|\s+दीजिए)?(?![\u0900-\u0963\u0966-\u097f\w])"
_HI_VERBS = (
    "(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|नज़रअन्दाज़|नजरअन्दाज|नज़रंदाज़|नजरंदाज|उपेक्षा|अवहेलना|इग्नोर)\\s+कर"
    + _HI_DO
    + r"|भूल\s+जा(?:ओ|इए|इये|एं|ें)?(?![\u0900-\u0963\u0966-\u097f\w])|ध्यान\s+(?:न|मत)\s+(?:दें|दो|दीजिए)"
)
_HE_NOUNS = "הוראות|הנחיות|הוראה|הנחיה|הפקודות|פקודות|החוקים|הכללים"
_HE_REST = (
    r"[^.\n]{0,40}?(?:"
    + _HE_NOUNS
    + r")[^.\n]{0,24}?(?:הקודמ|שלמעלה|הישנ|הקודם|קודם(?! כל)|המקורי)"
)
_HE_ADVERBS = "לגמרי|לחלוטין|עכשיו|כעת|פשוט|מיד|מעתה|בבקשה"
_EL_PREVIOUS = "|".join(_gr(w) for w in ("προηγουμεν", "παραπανω"))
_EL_OBJECT = "|".join(
    _gr(w)
    for w in (
        "τις", "τους", "τα", "την", "τον", "ολες", "ολους", "ολα", "καθε", "οσες", "αυτες",
        "οποιαδηποτε", "οποιεσδηποτε", "οποιουσδηποτε", "οποιοδηποτε",
    )
)  # fmt: skip
"""What a Greek order's object starts with (the accusative; a subject is "ο", "η", "οι")."""
_EL_ADVERBS = "|".join(
    _gr(w) for w in ("εντελως", "πληρως", "τωρα", "λοιπον", "αμεσως", "απλα", "παρακαλω")
)
_EL_NOUNS = "|".join(_gr(w) for w in ("οδηγι", "εντολ", "κανον"))
_TH_NOUNS = "คำสั่ง|คำแนะนำ|ข้อกำหนด|กฎ|คำชี้แจง|พรอมต์|พรอมท์"
_TH_START = (
    "(?:(?<![\u0e00-\u0e7f])|(?<=กรุณา)|(?<=โปรด)|(?<=คุณ)|(?<=จง)|(?<=ช่วย)|(?<=ขอให้)"
    "|(?<=ตอนนี้)|(?<=ต่อไปนี้))"
)
"""Where a Thai order may start: not right after a Thai letter (Thai writes a subject against
its verb: "the government paid no mind to..." is news), or after "please", "you", "now"."""
_ORDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Cyrillic": (
        # Russian: ignore / forget / pay no attention to (the) previous... instructions
        r"(?:\b(?:про)?игнорируй(?:те)?|(?<!не )(?<!he )\bзабудь(?:те)?|\bне обращай(?:те)? внимания на)\b[^.\n]{0,40}?"
        r"(?:предыдущ|прежн|вышеуказанн|вышеизложенн|выше|ранее|все)\w*+[^.\n]{0,24}?"
        r"(?:инструкци|указани|команд|правил|промпт|запрос)"
        # Ukrainian: the same, not after "do not"
        r"|(?<!не )(?<!he )(?:(?<!\w)(?:про)?ігноруй(?:те)?|\bзабудь(?:те)?|\bне (?:звертай(?:те)? уваги|зважай(?:те)?) на)\b"
        r"[^.\n]{0,40}?(?:попередн|вищенаведен|вищевказан|раніш|усі|всі)\w*+[^.\n]{0,24}?"
        r"(?:інструкці|вказівк|команд|правил|промпт|запит|настанов)",
        ("игнорир", "проигнорир", "забуд", "не обращай", "ігнору", "проігнору", "не звертай", "не зважай"),
    ),
    "Hangul": (
        # Korean: (the) previous / above / so far... instructions... ignore / forget
        r"(?:이전|앞|위|지금까지|기존)(?:의)?[^.\n]{0,24}?(?:지시|지침|명령|규칙|프롬프트)[^.\n]{0,24}?"
        r"(?:무시(?:하세요|하십시오|하시오|해\s?주세요|해라|하라|하고|해)|잊(?:으세요|으십시오|어\s?주세요|어라|어버려|어|고))",
        ("무시", "잊"),
    ),
    "Arabic": (
        # Arabic, the imperative (not "do not", not a noun): ignore / forget / neglect... (all) the
        # instructions (right after it: news has the one who ignored them there)... previous; or
        # pay no attention to them
        r"(?:(?<!عدم )(?<!\w)[وف]?(?:تجاهل|انس|أهمل|اهمل|تخط|اترك)(?:ي|وا)?(?!\w)"
        r"(?:[\s،,]+(?:من فضلك|رجاء|جميع|كل|كافة|هذه|تلك))*[\s،,]+"
        r"|(?<!\w)لا (?:تعر|تعري|تعيروا) (?:أي )?اهتمام\w* (?:ل|إلى |ب)?\w{0,3}?)(?:" + _AR_NOUNS + r")"
        r"[^.\n]{0,40}?(?:السابق|الماضي|أعلاه|القديم|المسبق|سابقا|من قبل|سبق)"
        # ... or (your) original ones, the system's, with "ignore" or "forget" (not where a verb
        # or "and the..." follows: "ignoring the system's instructions causes...", a noun)
        r"|(?<!\w)[وف]?(?:تجاهل|انس)(?:ي|وا)?(?:[\s،,]+(?:من فضلك|رجاء|جميع|كل|كافة))*[\s،,]+"
        r"(?:" + _AR_NOUNS + r")(?:ك\w{0,2})?[^.\n]{0,40}?(?:الأصلي|النظام|سبق)"
        r"(?!\w*\s+(?:[يت]\w|وعدم|وال|ومت|وما))"
        r"|(?<!\w)[وف]?(?:تجاهل|انس)(?:ي|وا)? كل ما سبق"
        # Persian: (the) previous... instructions... ignore / forget, or the verb first
        r"|(?:دستور|راهنما|قوانین|قواعد|فرمان)[^.\n]{0,40}?(?:قبلی|پیشین|بالا|قبل)[^.\n]{0,30}?"
        r"(?:نادیده بگیر|فراموش کن|اعتنا نکن|توجه نکن|صرف ?نظر کن|بی ?خیال\w* شو)(?:ید)?(?!\w)"
        r"|(?:نادیده بگیر|فراموش کن|صرف ?نظر کن)(?:ید)?(?!\w)[^.\n]{0,20}?(?:دستور|راهنما|قوانین|قواعد|فرمان)[^.\n]{0,30}?(?:قبلی|پیشین|بالا)"
        # Persian: don't mind (the previous...) ... become
        r"|بی ?خیال[^.\n]{0,10}?(?:دستور|راهنما|قوانین|قواعد|فرمان)[^.\n]{0,30}?(?:قبلی|پیشین|بالا)[^.\n]{0,10}?شو(?:ید)?(?!\w)",
        (
            *(p + v for p in ("", "و", "ف") for v in ("تجاهل", "أهمل", "اهمل", "تخط", "اترك")),
            *(p + "انس" + s for p in ("", "و", "ف") for s in ("", "ي", "وا")),
            "نادیده بگیر", "فراموش کن", "اعتنا نکن", "توجه نکن", "صرف نظر کن", "صرفنظر کن", "بی خیال",
            "بیخیال", *(f"{v} {w}" for v in ("تعر", "تعري", "تعيروا") for w in ("اهتمام", "أي")),
        ),
    ),
    "Devanagari": (
        # Hindi: (the) previous / above... instructions, rules... ignore / forget (the imperative,
        # not the past, nor "by ignoring"), or the verb first
        r"(?:पिछल|पूर्व|ऊपर|पहले)[^.\n।]{0,40}?(?:" + _HI_NOUNS + r")[^.\n।]{0,30}?(?:" + _HI_VERBS + ")"
        r"|(?:" + _HI_VERBS + r")[^.\n।]{0,30}?(?:पिछल|पूर्व|ऊपर|पहले)[^.\n।]{0,30}?(?:" + _HI_NOUNS + ")",
        ("अनदेखा", "नज़रअंदाज़", "नजरअंदाज", "नज़रअन्दाज़", "नजरअन्दाज", "नज़रंदाज़", "नजरंदाज", "उपेक्षा",
         "अवहेलना", "इग्नोर", "भूल जा", "ध्यान न", "ध्यान मत"),
    ),
    "Hebrew": (
        # Hebrew: ignore / forget (the imperative, or the future as one; not after "do not"; the
        # forms the past shares only where a sentence or an item starts without "and", or after
        # "please" or "now", and with what is dropped right after them or after an adverb, not a
        # subject)... the instructions... previous, above
        r"(?<!אל )(?<!\w)ו?(?:התעלמי|תתעלמ(?:י|ו)?|תתעלם|שכחי|תשכח(?:י|ו)?)(?!\w)" + _HE_REST
        + r"|(?:^|(?<=[.!?:;,\n\"'\-•*«“>#(])|(?<=אנא )|(?<=בבקשה )|(?<=עכשיו )|(?<=כעת ))\s*"
        r"(?:התעלמו|התעלם|שכחו|שכח)(?=,?\s+(?:(?:" + _HE_ADVERBS + r"),?\s+)?(?:את\s|כל\s|מכל\s|מה))(?!\w)"
        + _HE_REST,
        tuple(p + v for p in ("", "ו") for v in ("התעלמ", "התעלם", "תתעלמ", "תתעלם", "שכח", "תשכח")),
    ),
    "Greek": (
        # Greek: ignore / forget / overlook (the imperative; not after "do not"; the forms the
        # past shares only where a sentence or an item starts, or after "please", and with what
        # is dropped right after them or after an adverb: not a subject)...
        # previous, above... instructions, or the instructions before "above"
        r"(?:(?<!μην )(?<!mην )(?<!\w)(?:"
        + "|".join(_gr(w) for w in ("αγνοηστε", "ξεχνα", "ξεχαστε", "παραβλεψτε"))
        + r")|(?:^|(?<=[.!?;:,\n\"'\-•*«“>#(])|(?<=παρακαλω )|(?<=" + _gr("τωρα") + r" ))\s*(?:"
        + "|".join(_gr(w) for w in ("αγνοησε", "ξεχασε", "παραβλεψε"))
        + r")(?=,?\s+(?:(?:" + _EL_ADVERBS + r"),?\s+)?(?:(?:" + _EL_OBJECT + r")(?!\w)|"
        + _EL_PREVIOUS + r")))(?!\w)[^.\n]{0,40}?(?:(?:" + _EL_PREVIOUS + r")\w*+[^.\n]{0,24}?(?:" + _EL_NOUNS + r")"
        r"|(?:" + _EL_NOUNS + r")\w*+[^.\n]{0,24}?(?:" + _EL_PREVIOUS + "))",
        tuple(
            "".join(w)
            for stem in ("αγνοη", "ξεχν", "ξεχα", "παραβλ")
            for w in itertools.product(*({"ε": "εe", "η": "ηh", "ν": "νn", "χ": "χx"}.get(c, c) for c in stem))
        ),
    ),
    "Thai": (
        # Thai (no spaces): ignore / omit / forget (not after "do not"), or pay no mind / need not
        # follow where a sentence starts (a subject right before it: news, a tutorial)... the
        # instructions... previous, above
        r"(?:(?<!อย่า)(?:เพิกเฉย|ละเว้น|ไม่ต้องสนใจ)|" + _TH_START + r"(?:ไม่สนใจ|ไม่ต้องทำตาม))"
        r"[^.\n]{0,24}?(?:" + _TH_NOUNS + r")[^.\n]{0,24}?"
        r"(?:ก่อนหน้า|ข้างต้น|ก่อนนี้|เดิม)"
        r"|(?<!อย่า)(?<!ไม่)ลืม(?:" + _TH_NOUNS + r")[^.\n]{0,24}?(?:ก่อนหน้า|ข้างต้น|ก่อนนี้|เดิม)",
        ("เพิกเฉย", "ละเว้น", "ไม่ต้องสนใจ", "ไม่สนใจ", "ไม่ต้องทำตาม", *(f"ลืม{n}" for n in _TH_NOUNS.split("|"))),
    ),
}  # fmt: skip
"""Orders in scripts other than Latin, by script: the pattern, as drawn (searched folded), and
its verbs (or the words with them), one of which every match has within :data:`ORDER_REACH`."""
ORDER_REACH = (160, 120)
"""How far an order may start before its verb (a Korean, Persian or Hindi order ends with it)
and end after it."""
ORDER_GATES = tuple(
    (
        script,
        re.compile("[" + "".join(sorted({c for w in (*drawn, *verbs) for c in w if not c.isascii()})) + "]"),
        verbs,
        re.compile(folded(pattern), re.I),
    )
    for script, pattern, drawn, verbs in (
        (s, p, vs, tuple(dict.fromkeys(folded(v) for v in vs))) for s, (p, vs) in _ORDERS.items()
    )
)  # fmt: skip
"""For each script: its name, a letter of its verbs as drawn or folded, the verbs folded, the
orders folded. A text is searched for a script's verbs only where it has one of their letters."""
LINE_GATES = tuple(g for g in ORDER_GATES if g[0] in ("Hebrew", "Greek"))
"""The scripts some of whose orders count only where a sentence or a line starts."""


def other_orders(text: str) -> bool:
    """Whether ``text`` (one reading of it) holds an order of :data:`_ORDERS` or
    :data:`MORE_LATIN_RE`, looked for around their verbs as the unread rest is (too many verbs
    to read around: it does, failing closed), in its lines and with its lines joined."""
    ascii_only = text.isascii()
    low = text.lower() if ascii_only else text.casefold()
    latin = any(w in low for w in MORE_LATIN_GATE)
    scripts = [] if ascii_only else [g for g in ORDER_GATES if g[1].search(low)]
    if not (latin or scripts):
        return False
    if not ascii_only:
        low = folded(text)
    if (latin and latin_ordered(low)) or script_ordered(low, scripts):
        return True
    if "\n" not in low:
        return False
    # An order may be wrapped over lines (a mail, a page cut at 80 columns): read joined too.
    joined = " ".join(low.split())
    return (latin and latin_ordered(joined)) or script_ordered(joined, scripts)


def latin_ordered(low: str) -> bool:
    """Whether ``low`` (folded) holds an order of :data:`MORE_LATIN_RE` around one of its verbs
    (too many verbs to read around: it does, failing closed)."""
    return in_windows(low, MORE_LATIN_ANCHORS, MORE_LATIN_RE, MORE_LATIN_REACH) is not False


Gate = tuple[str, re.Pattern[str], tuple[str, ...], re.Pattern[str]]
"""A script's name, its letters, its verbs, its orders (:data:`ORDER_GATES`)."""


def script_ordered(low: str, gates: Sequence[Gate] = ORDER_GATES) -> bool:
    """Whether ``low`` (folded) holds an order of :data:`_ORDERS` in one of the scripts of
    ``gates`` that it is written in, around one of its verbs (failing closed likewise)."""
    return any(
        letters.search(low) and in_windows(low, verbs, order, ORDER_REACH, words=True) is not False
        for _, letters, verbs, order in gates
    )


__all__ = [
    "LINE_GATES",
    "MAX_ANCHORS_SEEN",
    "MAX_REST_SCANNED",
    "MORE_LATIN_ANCHORS",
    "MORE_LATIN_GATE",
    "MORE_LATIN_RE",
    "MORE_LATIN_REACH",
    "ORDER_GATES",
    "ORDER_REACH",
    "WHOLE_WORDS",
    "Gate",
    "drawn_digits",
    "drawn_letters",
    "folded",
    "folded_plain",
    "in_windows",
    "latin_ordered",
    "merged_spans",
    "other_orders",
    "script_ordered",
]
