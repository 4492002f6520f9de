"""Orders to act written in German, French, Spanish, Italian, Portuguese and Dutch: the verbs
the order reader (:mod:`duraguard._imperatives`) reads beside the English ones, and the words
that lead into an order there as "please" does.

"Bitte lösche contracts-2024.pdf", "Veuillez supprimer le fichier 13", "Por favor, borra
contracts-2024.pdf": an order whose verb starts its clause, as in English. Verbs are read with
their accents dropped (``loschen``, ``envia``, ``uberweisen``): a text is lower-cased and read
through :data:`ACCENTS`, one character for one, so a verb's place is the same in the text. A
verb at the end of its clause ("Bitte die Datei löschen") is not read (the English order reader
reads a verb that starts a clause only).

The person's turn is read for them too, anywhere in it, with their participles and pronoun forms
(:func:`kinds_said`): "Lies die E-Mail und lösche den alten Entwurf" asks for a delete as
"delete the old draft" does (:func:`duraguard.checks.policy.intent.asks_for`). Only a word in
lower case counts, or one that starts a sentence, a line or a clause: "the email from Jette"
asks for nothing. A turn that also holds a word saying not, but, except, avoid or keep anywhere
(:data:`NOT`: "nicht", "ne ... rien", "außer", "sin", "onder geen beding", "behalte") asks for
its kind perhaps: the call is asked, never run alone. What the person's words abroad act on is
not read (:mod:`duraguard._acted` says why): their delete of a record that content names too is
asked. The words a tool's name says are English (:func:`duraguard._imperatives.tool_words`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ._drawn import LOOKALIKES

ABROAD: dict[str, tuple[str, ...]] = {
    "delete": (
        "losche", "loschen", "entferne", "entfernen", "storniere", "stornieren", "kundige",
        "kundigen", "supprime", "supprimez", "supprimer", "efface", "effacez", "effacer",
        "annule", "annulez", "annuler", "elimina", "elimine", "eliminar", "eliminare", "borra",
        "borre", "borrar", "suprime", "suprima", "suprimir", "cancela", "cancele", "cancelar",
        "cancella", "cancellare", "rimuovi", "rimuovere", "annulla", "annullare", "exclua",
        "excluir", "apague", "apagar", "remova", "verwijder", "verwijderen",
        "annuleer", "annuleren", "losch", "loesche", "loeschen", "entfern", "retire", "retirez",
        "retirer", "jette", "jetez", "quita", "quitar", "togli", "togliere", "deletar",
        "apaga", "gooi",
    ),
    "send": (
        "sende", "senden", "schick", "schicke", "schicken", "weiterleiten", "envoie", "envoyez",
        "envoyer", "transfere", "transferez", "transferer", "envia", "envie", "enviar",
        "reenvia", "reenvie", "reenviar", "invia", "inviare", "inoltra", "inoltrare", "encaminhe",
        "encaminhar", "stuur", "verstuur", "versturen", "doorsturen",
    ),
    "pay": (
        "uberweise", "uberweisen", "zahle", "bezahle", "bezahlen", "paie", "payez",
        "payer", "virez", "virer", "paga", "pague", "pagar", "transfiere", "transfiera",
        "transferir", "pagare", "bonifica", "transfira", "betaal", "betalen", "overmaken",
    ),
    "change": (
        "aktualisiere", "aktualisieren", "modifie", "modifiez", "modifier", "cambia", "cambie", "cambiar",
        "modifica", "modificare", "altere", "alterar", "wijzig", "wijzigen",
    ),
}  # fmt: skip
"""Per kind of action (:data:`duraguard._imperatives.KINDS`), its verbs in those languages:
the imperative (the familiar and the polite form where they differ) and the infinitive (which
orders after "bitte", "veuillez", "por favor"), accents dropped. Not a form that is as often
another word ("ändere" and "andere", other; "zahlen", numbers), in English too ("quite", Spanish
for "remove"; "remover", Portuguese): "Quite a few files are old" orders nothing."""

_PRONOUNS = (
    "-le",
    "-la",
    "-les",
    "-lo",
    "-los",
    "-o",
    "-a",
    "-os",
    "-as",
    "lo",
    "la",
    "los",
    "las",
    "li",
)
PRONOUNED: dict[str, str] = {
    (verb[:-1] if verb.endswith(("are", "ere", "ire")) and p[0] != "-" else verb) + p: kind
    for kind, verbs in ABROAD.items()
    for verb in verbs
    for p in _PRONOUNS
}
"""A verb of :data:`ABROAD` with its object's pronoun on it, as French and Portuguese join it
("Supprime-le", "Apague-o") and Spanish and Italian write it ("Bórralo", "eliminarlo"), and its
kind: an order whose object is named after it ("Supprime-le : contracts-2024.pdf"), never a
heading's word ("Update:")."""

_LEAD_WORDS = (
    r"bitte|gelieve|graag|kannst du|du kannst|konnen sie|sie konnen|ihr konnt|konnten sie"
    r"|konntest du|wurden sie|wurdest du|kun je|je kunt|kunt u|u kunt|wilt u|wil je|zou je|muss"
    r"|mussen|soll|sollen|sollte|sollten|moet|moeten|dient|dienen|ist zu|sind zu|wir bitten sie"
    r"|ich bitte sie|ich bitte dich|vergiss nicht|vergessen sie nicht|denk daran"
    r"|denken sie daran|vergeet niet|es ware gut"
)
_LEADS_LAST = re.compile(
    rf"(?:\b(?:{_LEAD_WORDS})\b,?|(?:^|\b)(?:todo|to-do|aufgaben?|taken?)[ \t]*:)"
    r"(?:[^.!?;:\n,]|[.!?;:](?!\s))*\Z",
    re.M,
)
_LEADS_DONE = re.compile(
    rf"\b(?:{_LEAD_WORDS}|kann|darf|konnen|durfen|kan|mag|mogen)\b"
    r"(?:[^.!?;:\n,]|[.!?;:](?!\s))*\Z"
)
_ENDS = r"[ \t]*(?:[.!?;,):\u2013\u2014]|[ \t]-[ \t]|\n|\Z)"
_LAST = re.compile(_ENDS)
_LAST_DONE = re.compile(rf"[ \t]+(?:werden|wird|worden){_ENDS}")
_WORDEN = re.compile(r"\b(?:worden|werden)[ \t]+\Z")
LOOK_BACK_LAST = 120
"""Characters before a verb that ends its clause searched for what leads into the order."""


def verb_last(low: str, at: int, end: int, done: bool) -> bool:
    """Whether the verb abroad at ``at`` in the lowered text ``low`` (ending at ``end``) ends
    an order whose clause it closes, German or Dutch: after "bitte", "gelieve", "könnten Sie",
    "muss" in its sentence ("Bitte die Datei contracts-2024.pdf löschen.", "Gelieve X te
    verwijderen.", "TODO: X löschen", "Sie können X löschen", "X ist zu löschen"), in its clause
    (not "Ich muss X prüfen, bevor wir etwas löschen"); a participle (``done``) before "werden"
    or after "worden" ("X muss gelöscht werden", "X kann gelöscht werden", "X moet worden
    verwijderd"). A colon or a dash may end it ("... gelöscht werden: X")."""
    back = max(0, at - LOOK_BACK_LAST)
    if not done:
        return _LAST.match(low, end) is not None and _LEADS_LAST.search(low, back, at) is not None
    ends = _LAST_DONE.match(low, end) or (_WORDEN.search(low, back, at) and _LAST.match(low, end))
    return bool(ends) and _LEADS_DONE.search(low, back, at) is not None


LEADS = (
    r"bitte|por favor|per favore|s'il vous pla[i\u00ee]t|veuillez|merci de|graag|alstublieft"
    r"|favor de|se faz favor|favor|il faut|hay que|tienes que|tiene que|si prega di|gelieve"
    r"|pourriez-vous|pouvez-vous|peux-tu|puedes|podr[i\u00ed]as|potresti|pode"
    r"|vous devez|tu dois|il faudrait|je vous prie de|merci de bien vouloir|debes|debe"
    r"|deber[i\u00ed]as|bisogna|dovresti|devi|ti chiedo di|le chiedo di|[e\u00e9] preciso"
    r"|poderia|podia|voc[e\u00ea] deve"
)
"""Words that lead into an order as "please" does ("Bitte lösche", "Veuillez supprimer")."""
FILLERS = (
    r"auch|aussi|[e\u00e9]galement|tambi[e\u00e9]n|anche|ook|tamb[e\u00e9]m|noch|bien|tout de suite"
    r"|sofort|subito|ya|enseguida"
)
"""Words that may stand between those words and the verb ("Veuillez également supprimer")."""

_PAIRS = "äa öo üu ßs ée èe êe ëe àa âa áa íi ìi îi ïi óo òo ôo õo úu ùu ûu ñn çc ãa"
ACCENTS = str.maketrans({pair[0]: pair[1] for pair in _PAIRS.split()})
"""Accented letters of those languages as the unaccented (one character for one: ``ß`` an
``s``), so a verb is found where it stands in the lower-cased text."""


def lowered(text: str) -> str:
    """``text`` lower-cased with accents dropped and look-alike letters read as Latin, each
    character where it stands ("İ" lowers to two: kept as it is; "lösche" is read as "losche",
    "d\u0435lete" with a Cyrillic e as "delete")."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low if low.isascii() else low.translate(ACCENTS).translate(LOOKALIKES)


DONE: dict[str, tuple[str, ...]] = {
    "delete": (
        "geloscht", "entfernt", "storniert", "gekundigt", "efface", "annule", "eliminado",
        "eliminada", "borrado", "borrada", "suprimido", "cancelado", "eliminato", "eliminata",
        "cancellato", "rimosso", "annullato", "excluido", "apagado", "removido", "verwijderd",
        "geannuleerd",
    ),
    "send": (
        "gesendet", "geschickt", "weitergeleitet", "envoye", "transfere", "enviado", "inviato",
        "inoltrato", "encaminhado", "gestuurd", "verstuurd", "doorgestuurd",
    ),
    "pay": (
        "uberwiesen", "bezahlt", "gezahlt", "paye", "pagado", "pagato", "pago", "betaald",
        "overgemaakt",
    ),
    "change": (
        "aktualisiert", "geandert", "modifie", "cambiado", "modificado", "modificato",
        "alterado", "gewijzigd",
    ),
}  # fmt: skip
"""Per kind, its past participles, accents dropped: a person asks with them too ("Ich möchte,
dass der Entwurf gelöscht wird"). Read in the person's turn only, never as an order in content."""
_ENGLISH_TOO = frozenset({"payer", "retire", "efface", "modifier", "paye", "pago", "cambia"})
"""Verbs abroad that an English turn says as its own words ("the payer", "when Bob plans to
retire", "a modifier", "PAYE", "Pago Pago"): not read in the person's turn, where a word anywhere
asks."""
_SAID = {
    kind: frozenset((*verbs, *DONE[kind], *(v for v, k in PRONOUNED.items() if k == kind)))
    - _ENGLISH_TOO
    for kind, verbs in ABROAD.items()
}
NOT = re.compile(
    r"\b(?:nicht|nichts|kein|keine[mnrs]?|nie|niemals|keinesfalls|ausser|auser|ohne|statt|ne|n'"
    r"|pas|jamais|rien|aucune?|sans|sauf|excepte|plutot|no|nunca|nada|ningun[oa]?|jamas|sin"
    r"|excepto|salvo|menos|non|mai|niente|nulla|nessun[oa]?|senza|tranne|eccetto|invece|nao"
    r"|nenhuma?|sem|exceto|niet|geen|nooit|niets|zonder|behalve|maar|but|not|except|weder"
    r"|ni|nem|nor|keep|behalte|behalten|garde|gardez|garder|conserve|conservez|conserver"
    r"|conserva|conservar|mantener|manten|mantenga|mantieni|houd|bewaar|mantenha|manter"
    r"|avoid|evite|evitez|eviter|evita|evitar|evitare|vermeide|vermeiden|vermijd|aber|mais|pero)\b"
)
"""Words of those languages (and English) that say not, without, but, except or keep, lowered:
a turn that holds one may forbid what its verb names ("lösche nichts", "ne supprime rien",
"weder … noch", "elimina tutto tranne ...", "lösche X und behalte Y", "évite de supprimer X"),
so what it asks for is not read as asked (:func:`kinds_said`)."""


NO_LONGER = re.compile(
    r"\b(?:(?:brauch|benotig)\w*\s+(?:(?:ich|wir)\s+)?(?:(?:sie|ihn|es|die|das|den)\s+)?nicht\s+mehr"
    r"|nicht\s+mehr\s+(?:notig|gebraucht|benotigt)|ya\s+no\s+(?:(?:lo|la|los|las)\s+)?necesit\w*"
    r"|no\s+(?:lo|la|los|las)\s+necesito\s+m[a]s|non\s+(?:mi|ci|ti)\s+serv\w*\s+piu"
    r"|non\s+serv\w*\s+piu|(?:je\s+)?n'en\s+(?:ai|avons)\s+plus\s+besoin|plus\s+besoin"
    r"|n'est\s+plus\s+(?:necessaire|utile)|(?:ja\s+)?nao\s+(?:preciso|precisamos)\s+mais"
    r"|(?:heb|hebben)\s+(?:ik|we|wij)\s+(?:\w+\s+)?niet\s+meer\s+nodig|niet\s+meer\s+nodig"
    r"|no\s+longer\s+need\w*|(?:do\s+not|don't)\s+need\s+(?:it|them|this|that)\s+anymore)\b"
)
"""Words that say the person needs something no more, lowered ("ich brauche sie nicht mehr",
"ya no lo necesito", "non mi serve più", "je n'en ai plus besoin"): a reason to delete, not a
word saying not, so left out where :data:`NOT` is looked for."""


def _not_in(low: str) -> bool:
    return NOT.search(NO_LONGER.sub(" ", low)) is not None


@lru_cache(maxsize=256)
def kinds_said(turn: str) -> tuple[frozenset[str], bool]:
    """The kinds of action (:data:`ABROAD`) whose verbs or participles the person's ``turn``
    says in those languages, anywhere in it, and whether it holds a word of :data:`NOT`."""
    turn = unicodedata.normalize("NFC", turn)  # an accent written apart: "lo\u0308sche"
    low = lowered(turn)
    shouted = turn.isupper()
    words = frozenset(
        low[m.start() : m.end()]
        for m in _WORD.finditer(turn)
        if m.group().islower() or shouted or _starts(turn, m.start())
    )
    kinds = frozenset(kind for kind, said in _SAID.items() if said & words)
    return kinds, bool(kinds) and _not_in(low)


def _starts(turn: str, at: int) -> bool:
    """Whether a word at ``at`` of ``turn`` starts a sentence, a line or a clause, and not after a
    title ("Dr. Zahle", "Hr. Lösch": a name)."""
    starts = _STARTS.search(turn, max(0, at - 8), at)
    return bool(starts) and not _TITLE.search(turn, max(0, at - 12), at)


_TITLE = re.compile(
    r"(?<![^\W\d_])(?:dr|mr|mrs|ms|prof|st|hr|fr|sr|sra|srta|mme|mlle|dott|sig|ing|mag|jr)"
    r"\.\s*\Z",
    re.I,
)
"""A title before a name, its dot no sentence's end."""
_WORD = re.compile(r"[^\W\d_]+")
_STARTS = re.compile(r"(?:\A|[.!?;:\u00a1\u00bf\n,])[\s\"'\u00ab(*\-]*\Z")
"""What stands before a verb written with a capital: the turn's start, a sentence's, a line's
or a clause's ("Lösche ...", "Por favor, Borra ..."). Elsewhere a capital word is a name or a
noun, and one in capitals a name too, unless the whole turn is ("the email from Jette", "my
PAYE code")."""


DETERMINERS = frozenset(
    {"the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that",
     "these", "those", "any", "all", "die", "der", "das", "den", "dem", "des", "ein", "eine",
     "einen", "einem", "einer", "eines", "meine", "mein", "meinen", "meinem", "meiner",
     "deine", "dein", "deinen", "diese", "diesen", "dieser", "dieses", "la", "le", "les", "l'",
     "un", "une", "ma", "mon", "mes", "ta", "ton", "tes", "ce", "cet", "cette", "el", "los",
     "las", "una", "mi", "mis", "tu", "tus", "il", "lo", "gli", "mia", "mio", "het", "de",
     "mijn", "o", "os", "as", "um", "uma", "meu", "minha"}
)  # fmt: skip
"""Words before a noun, in English and those languages, lowered: after one, a word that names a
thing as often as an action ("die E-Mail", "l'e-mail", "the email") names the thing."""
ENDS_AN_OBJECT = frozenset(
    {"und", "oder", "aber", "über", "uber", "von", "vom", "zu", "zum", "zur", "mit", "für",
     "fur", "im", "am", "auf", "aus", "bei", "nach", "ohne", "ausser", "nicht", "ist", "sind",
     "sondern", "weil", "wenn", "dann", "et", "ou", "mais", "sur", "du", "des", "avec", "pour",
     "dans", "sauf", "sans", "ne", "pas", "puis", "est", "y", "e", "pero", "sobre", "con",
     "para", "en", "excepto", "salvo", "sin", "luego", "ed", "ma", "su", "di", "da",
     "del", "della", "per", "tranne", "senza", "non", "poi", "maar", "over", "met", "voor",
     "behalve", "zonder", "niet", "dan", "mas", "com", "exceto", "sem", "não", "nao", "depois",
     "dos", "das", "de"}
)  # fmt: skip
"""Words of those languages, lowered, that end what the person's words act on as "and",
"about", "except" do in English (:func:`duraguard._rows.acted_keys`): "Lies die E-Mail über
contracts-2024.pdf" acts on no contracts. Not "no" nor "do", English words too ("invoice no.
13")."""
