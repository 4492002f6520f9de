"""Orders to act written in German, French, Spanish, Italian, Portuguese and Dutch: the verbs
the order reader (:mod:`duraguard._imperatives`) reads beside the English ones, and the words
that lead into an order there as "please" does.

"Bitte lösche contracts-2024.pdf", "Veuillez supprimer le fichier 13", "Por favor, borra
contracts-2024.pdf": an order whose verb starts its clause, as in English. Verbs are read with
their accents dropped (``loschen``, ``envia``, ``uberweisen``): a text is lower-cased and read
through :data:`ACCENTS`, one character for one, so a verb's place is the same in the text. A
verb at the end of its clause ("Bitte die Datei löschen") is not read (the English order reader
reads a verb that starts a clause only).

The order reader reads them, and what the person's words act on (:func:`duraguard._rows.
acted_keys`: "Bitte lösche contracts-2024.pdf" acts on it, "Lösche contracts-2024.pdf nicht"
on nothing); the words a tool's name says (:func:`duraguard._imperatives.tool_words`) are
English.
"""

from __future__ import annotations

ABROAD: dict[str, tuple[str, ...]] = {
    "delete": (
        "losche", "loschen", "entferne", "entfernen", "storniere", "stornieren", "kundige",
        "kundigen", "supprime", "supprimez", "supprimer", "efface", "effacez", "effacer",
        "annule", "annulez", "annuler", "elimina", "elimine", "eliminar", "eliminare", "borra",
        "borre", "borrar", "suprime", "suprima", "suprimir", "cancela", "cancele", "cancelar",
        "cancella", "cancellare", "rimuovi", "rimuovere", "annulla", "annullare", "exclua",
        "excluir", "apague", "apagar", "remova", "remover", "verwijder", "verwijderen",
        "annuleer", "annuleren",
    ),
    "send": (
        "sende", "senden", "schicke", "schicken", "weiterleiten", "envoie", "envoyez",
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
another word ("ändere" and "andere", other; "zahlen", numbers)."""

VERBS_ABROAD = frozenset(v for vs in ABROAD.values() for v in vs)
NEGATIONS = frozenset(
    {"nicht", "kein", "keine", "nie", "niemals", "ne", "pas", "jamais", "no", "nunca", "non",
     "mai", "niet", "nooit", "nao"}
)  # fmt: skip
"""Words that say, in those languages, that an action is not to be done; German, French and
Dutch say it after the verb ("Lösche contracts-2024.pdf nicht"), so the person's words with one
near the verb act on nothing (:func:`duraguard._rows.acted_keys`)."""

LEADS = (
    r"bitte|por favor|per favore|s'il vous pla[i\u00ee]t|veuillez|merci de|graag|alstublieft"
    r"|favor de|se faz favor"
)
"""Words that lead into an order as "please" does ("Bitte lösche", "Veuillez supprimer")."""

_PAIRS = "äa öo üu ßs ée èe êe ëe àa âa áa íi ìi îi ïi óo òo ôo õo úu ùu ûu ñn çc ãa"
ACCENTS = str.maketrans({pair[0]: pair[1] for pair in _PAIRS.split()})
"""Accented letters of those languages as the unaccented (one character for one: ``ß`` an
``s``), so a verb is found where it stands in the lower-cased text."""


def lowered(text: str) -> str:
    """``text`` lower-cased with accents dropped, each character where it stands ("İ" lowers to
    two: kept as it is; "lösche" is read as "losche")."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return low if low.isascii() else low.translate(ACCENTS)
