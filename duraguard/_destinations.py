"""Destinations inside text: where something could be sent (emails, URLs, hosts, IBANs, phones,
channels and handles), also where spelt out to slip past a reader (``ana [at] evil [dot] com``).

Pure and deterministic; provenance indexes them and the policy judges calls by them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ._reading import _CHANNEL, _HANDLE, _PHONE, EMAIL, URL, _inside, _Spans, _unrun

IBAN = re.compile(
    r"(?<![\w-])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![\w-])", re.I
)
HOST = re.compile(
    r"(?<![\w@.:/-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?![\w-])(?:/[^\s\"'<>]*)?",
    re.I,
)
_IBAN_START = re.compile(r"[A-Za-z]{2}\d{2}")
_FILE_ENDINGS = frozenset(
    {
        "txt", "pdf", "doc", "docx", "xls", "xlsx", "csv", "ppt", "pptx", "png", "jpg", "jpeg",
        "gif", "json", "md", "py", "js", "ts", "html", "htm", "xml", "yaml", "yml", "zip", "tar",
        "gz", "mp3", "mp4", "mov", "wav", "log", "ini", "cfg", "conf", "eml", "ics", "odt", "rtf",
        "exe", "sh", "bat", "key", "pem", "sql", "db", "bak", "tmp", "svg", "webp",
    }
)  # fmt: skip
_AT = re.compile(
    r"(?<!\s)\s*+[\[\(\{<]\s*+(?:at|@)\s*+[\]\)\}>]\s*+"
    r"|(?<!\s)\s++(?:at|AT)\s++(?![^\s@]*@)(?=[\w-]+\s*(?:[\[\(\{<]\s*)?(?:\.|dot|DOT)\b)"
)
"""``[at]``, ``(@)``, and a spoken `` at `` before a host (``ana at evil dot com``); not the
``at`` before an address written out already (``me at dora@evil.example`` is one address)."""
_DOT = re.compile(
    r"(?<!\s)\s*+[\[\(\{<]\s*+(?:dot|\.)\s*+[\]\)\}>]\s*+|(?<!\s)\s++(?:dot|DOT)\s++(?=[a-zA-Z0-9])"
)
"""A spelled or bracketed dot; like :data:`_AT` it starts only where a run of white space does
and holds the run whole (tried from every space of a run, 10,000 spaces took 1.7 s)."""
_HXXP = re.compile(r"\bhxxp(s?)://", re.I)
Destination = tuple[str, str]
"""``(kind, canonical form)``: kind is ``email``, ``url``, ``host``, ``iban``, ``phone`` or ``handle``."""


def deobfuscate(text: str) -> str | None:
    """``ana [at] evil [dot] com``, ``evil(.)com``, ``hxxp://``: the text with addresses written
    out, or ``None`` where nothing was spelt out in other words."""
    out = _HXXP.sub(r"http\1://", text)
    out = _DOT.sub(".", _AT.sub("@", out))
    return out if out != text else None


def canonical_url(url: str) -> str:
    """A URL as provenance compares it: lower case, no scheme, no ``www.``, no trailing slash."""
    u = url.strip().rstrip(".,;:!?)").lower()
    u = re.sub(r"^[a-z][a-z0-9+.-]*://", "", u)
    u = u.removeprefix("www.")
    return u.rstrip("/")


def host_of(url: str) -> str:
    """The host of a URL (in :func:`canonical_url` form), without user info or port."""
    rest = canonical_url(url)
    host = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return host.rsplit("@", 1)[-1].split(":", 1)[0]


def canonical_iban(text: str) -> str:
    return re.sub(r"[\s-]", "", text).upper()


def is_iban(text: str) -> bool:
    """Whether ``text`` is written like an IBAN (country, check digits, 11 to 30 letters or digits)."""
    t = canonical_iban(text)
    return (
        15 <= len(t) <= 34
        and re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]+", t) is not None
        and any(c.isdigit() for c in t[4:])
    )


def destinations_in(text: str) -> list[Destination]:  # noqa: C901  (one pass over the text: a branch per kind of destination, so each span is claimed once)
    """Every place something could be sent that ``text`` names: emails, URLs, bare hosts,
    IBANs, phone numbers, ``@handles`` and ``#channels``, in canonical form, in order."""
    found: list[tuple[int, Destination]] = []
    taken = _Spans(len(text))

    def add(kind: str, start: int, end: int, value: str) -> None:
        if not _inside(start, taken):
            taken.append((start, end))
            found.append((start, (kind, value)))

    at = "@" in text
    if at:
        for m in EMAIL.finditer(text):
            add("email", m.start(), m.end(), m.group(0).lower())
    if "://" in text or "www." in text.lower():
        for m in URL.finditer(text):
            add("url", m.start(), m.end(), canonical_url(_unrun(m.group(0))))
    if "." in text:
        for m in HOST.finditer(text):
            tld = m.group(0).split("/", 1)[0].rsplit(".", 1)[-1].lower()
            if tld not in _FILE_ENDINGS and not m.group(0)[0].isdigit():
                add("url", m.start(), m.end(), canonical_url(_unrun(m.group(0))))
    if _IBAN_START.search(text):
        for m in IBAN.finditer(text):
            if is_iban(m.group(0)):
                add("iban", m.start(), m.end(), canonical_iban(m.group(0)))
    if "+" in text:
        for m in _PHONE.finditer(text):
            add("phone", m.start(), m.end(), "+" + re.sub(r"\D", "", m.group(0)))
    if at:
        for m in _HANDLE.finditer(text):
            add("handle", m.start(), m.end(), m.group(0)[1:].lower())
    if "#" in text:
        for m in _CHANNEL.finditer(text):
            add("handle", m.start(), m.end(), m.group(0)[1:].lower())
    return [d for _, d in sorted(found)]


@lru_cache(maxsize=4096)
def destination_of(value: str) -> Destination | None:
    """The destination ``value`` is as a whole (``ana@x.com``, ``https://x.com/a``, an IBAN,
    ``#ops``), or ``None`` where it is not one."""
    v = value.strip()
    if not v or len(v) > 2048 or (any(c.isspace() for c in v.strip()) and not is_iban(v)):
        return None
    if EMAIL.fullmatch(v):
        return ("email", v.lower())
    if URL.fullmatch(v):
        return ("url", canonical_url(v))
    if is_iban(v):
        return ("iban", canonical_iban(v))
    if _PHONE.fullmatch(v):
        return ("phone", "+" + re.sub(r"\D", "", v))
    if _HANDLE.fullmatch(v) or _CHANNEL.fullmatch(v):
        return ("handle", v[1:].lower())
    m = HOST.fullmatch(v)
    if m and v.rsplit(".", 1)[-1].split("/", 1)[0].lower() not in _FILE_ENDINGS:
        return ("url", canonical_url(v))
    return None
