"""Orders to drop the instructions in the languages written in Latin letters that
:mod:`duraguard._orders` reads besides English, French, German, Spanish, Italian and Portuguese
(:mod:`duraguard._markers`): Dutch, Polish, Czech, the Scandinavian languages, Finnish,
Indonesian, Romanian, Turkish, Vietnamese and Hindi written in Latin letters, folded (no case,
no accents). An order in these must name the instructions; see :mod:`duraguard._orders` for how
they are searched (around their verbs, the unread rest as the whole).
"""

from __future__ import annotations

import re

_NOT_BEFORE = (
    "(?<!nie )(?<!ala )(?<!jangan )(?<!nu )(?<!niet )(?<!dung )(?<!khong )(?<!ne )(?<!da )"
)
_NOT_AFTER = r"(?! (?:niet|inte|ikke|mat)\b)"
_VERBS = (
    r"negeer|vergeet|zignoruj(?:cie)?|ignoruj(?:cie|te)?|zapomnij(?:cie)?|zapomen(?:te)?|"
    r"pomin(?:cie)?|ignorera|ignorer|glom|glem|strunta i|bortse fran|bortse fra|se bort fra|"
    r"unohda|unohtakaa|ohita|ohittakaa|jata huomiotta|abaikan(?:lah)?|lupakan(?:lah)?|hiraukan|"
    r"uita|uitati|ignora|ignorati|ignoreaza|nu tine cont de|nie zwracaj(?:cie)? uwagi na|"
    r"nevsimej(?:te)? si|ala valita|jangan pedulikan|jangan hiraukan|prosze zignorowac"
)
"""Ignore, forget, skip (the imperative) in Dutch, Polish, Czech, Swedish, Norwegian, Danish,
Finnish, Indonesian and Romanian, folded."""
_NOUNS = (
    r"instructies?|opdrachten|aanwijzingen|regels|instrukcj\w*+|polecen\w*+|wskazow\w*+|pokyn\w*+|"
    r"instrukc\w*+|instruktion\w*+|instruksjon\w*+|instrukser|anvisning\w*+|regler\w*+|"
    r"ohje(?:et|ita|iden|en|isiin|ista|ille)?\b|"
    r"saann\w*+|instruksi|perintah|petunjuk|arahan|aturan|instructiun\w*+|comenzi\w*+|reguli\w*+|"
    r"prompt\w*+|polecen\w*+"
)
_BEFORE = (
    r"vorige|eerdere?|voorgaande|bovenstaande|hierboven|poprzedni\w*+|wczesniejsz\w*+|powyzsz\w*+|"
    r"powyzej|predchozi\w*+|vyse|tidigare|tidligere|foregaende|ovanstaende|ovenstaende|ovan|"
    r"ovenfor|aiemm\w*+|edelli\w*+|edella|ylla|sebelumnya|sebelum ini|terdahulu|di atas|lama|tadi|"
    r"anterioare|de mai sus|oude|dotychczasow\w*+|dosavadni\w*+|drive|forrige"
)
_TR_WORDS = "talimat|yonerge|kural|direktif|emir|emirler|instruction|prompt"
_TR_NOUNS = (
    _TR_WORDS + r"|(?:tum|butun) komut|komut(?:u|lari)\b(?=[^.\n]{0,60}?\bve\b)"
    r"|komutlar(?![^.\n]{0,80}?(?:terminal|komut satir|calistir|konsol|kabuk|shell|bash))"
)
"""Instructions in Turkish, folded. Commands ("komut") where all are dropped, or dropped with
another order after them ("... and type this in the terminal", a tutorial's "... and run the
new one" too), else only in the plural and not where a shell is spoken of after them: "forget
the previous command(s), the new one is faster" is a tutorial."""
_TR_VERBS = (
    r"yok ?say(?:in|iniz)?|gormezden gel(?:in|iniz)?|unut(?:un|unuz)?|dikkate alma(?:yin|yiniz)?|"
    r"goz ardi et(?:in|iniz)?|umursama(?:yin)?|uyma(?:yin)?"
)
_MORE_LATIN = (
    _NOT_BEFORE + r"\b(?:" + _VERBS + r")\b" + _NOT_AFTER + r"[^.\n]{0,40}?"
    r"(?:\b(?:" + _NOUNS + r")[^.\n]{0,30}?\b(?:" + _BEFORE + r")"
    r"|\b(?:" + _BEFORE + r")[^.\n]{0,20}?\b(?:" + _NOUNS + "))"
    # Turkish, Hindi written in Latin letters: (the) previous... instructions... ignore / forget
    r"|\b(?:onceki|yukaridaki|daha once verilen|evvelki)\b[^.\n]{0,30}?"
    r"\b(?:" + _TR_NOUNS + r")\w*+[^.\n]{0,20}?\b(?:" + _TR_VERBS + r")\b"
    r"|\b(?:" + _TR_VERBS + r")\b[^.\n]{0,20}?\b(?:onceki|yukaridaki|evvelki)\b[^.\n]{0,20}?\b(?:" + _TR_WORDS + "|komut)"
    # Dutch with the verb last: the previous instructions... to ignore
    r"|\b(?:vorige|eerdere?|voorgaande|bovenstaande|oude)\s+(?:instructies?|opdrachten|aanwijzingen|regels)\b"
    r"[^.\n]{0,20}?\bte (?:negeren|vergeten)\b"
    r"|\b(?:pichle|pichhle|pichli|pichhli|pehle ke|upar (?:diye|likhe) (?:gaye|hue))\b[^.\n]{0,30}?"
    r"\b(?:instructions?|nirdesh|rules?|prompts?|commands?)\b[^.\n]{0,20}?"
    r"\b(?:ignore|bhool|bhul|nazarandaa?z)\s+(?:karo|karen|karein|kar do|kijiye|karna|jao|ja)\b"
    # Vietnamese: skip / forget / don't follow (all) the instructions... before, above (the verb
    # has no tense: news that someone skipped them reads alike, and is marked); a command
    # ("lenh") above only where the commands are (a tutorial skips the one above)
    r"|" + _NOT_BEFORE + r"\b(?:bo qua|phot lo|lo di|quen|dung lam theo|khong can tuan theo)\s+"
    r"(?:(?:(?:het|tat ca|moi|toan bo|nhung|cac)\s+(?:(?:nhung|cac)\s+)?lenh|(?:(?:het|tat ca|moi|toan bo|nhung|cac)\s+)*"
    r"(?:huong dan|chi dan|chi thi|menh lenh|lenh(?! (?:o )?tren\b)|quy tac|yeu cau|loi nhac))"
    r"\b[^.\n]{0,20}?\b(?:truoc(?! khi)|tren|he thong|cu)\b"
    # ... or what was said, everything, above
    r"|(?:(?:het|tat ca|moi|toan bo)\s+)?(?:nhung (?:gi|dieu)|moi (?:thu|dieu)|tat ca|toan bo)\s+"
    r"(?:(?:da|duoc)\s+)?(?:(?:noi|viet|neu|ghi|dan|bao)\s+)?(?:o\s+)?(?:phia\s+)?tren\b)"
)  # fmt: skip
MORE_LATIN_RE = re.compile(_MORE_LATIN, re.I)
"""Orders in more languages written in Latin letters, folded (Turkish, Polish, Vietnamese...)."""
_VI = ("het", "tat", "moi", "toan", "nhung", "cac", "huong", "chi", "menh", "lenh", "quy", "yeu")
MORE_LATIN_ANCHORS = (
    "negeer", "vergeet", "zignoruj", "ignoruj", "zapomn", "zapomen", "pomin", "ignorer", "glom",
    "glem", "strunta", "bortse", "se bort", "unohda", "unohta", "ohita", "ohitta", "jata huomiotta",
    "abaikan", "lupakan", "hiraukan", "uita", "ignora", "ignoreaza", "yok say", "yoksay",
    "gormezden", "unut", "unutun", "unutunuz", "dikkate alma", "goz ardi", "umursama", "uyma",
    "ignore", "bhool", "bhul", "nazaranda", "nu tine cont", "nie zwracaj", "nevsimej",
    "ala valita", "jangan pedulikan", "jangan hiraukan", "zignorowac", "te negeren", "te vergeten",
    *(f"{v} {w}" for v in ("bo qua", "phot lo", "lo di", "quen", "dung lam theo", "khong can tuan theo") for w in (*_VI, "loi")),
)  # fmt: skip
"""The verbs of :data:`MORE_LATIN_RE` (Vietnamese's with the word after them: alone they are
common words), folded: every match has one within :data:`MORE_LATIN_REACH`."""
MORE_LATIN_GATE = (
    "negeer", "vergeet", "ignor", "zapom", "pomin", "glom", "glem", "strunta", "bort", "unoh",
    "ohit", "huomiotta", "abaikan", "lupakan", "hiraukan", "uita", "yok", "gormezden", "unut",
    "dikkate", "goz ardi", "umursama", "uyma", "bhool", "bhul", "nazaranda", "bo qua", "phot lo",
    "lo di", "quen ", "dung lam", "tuan theo", "tine cont", "zwracaj", "nevsimej", "valita",
    "pedulikan", "negeren", "vergeten",
)  # fmt: skip
"""Fewer, shorter words, one of which every match has: a text without one is not searched."""
MORE_LATIN_REACH = (110, 140)
"""How far an order may start before its verb (Turkish and Dutch put it last) and end after it."""

__all__ = ["MORE_LATIN_ANCHORS", "MORE_LATIN_GATE", "MORE_LATIN_RE", "MORE_LATIN_REACH"]
