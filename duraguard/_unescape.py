"""Text a model reads through escapes: a URL's or a form's percent-encoding, HTML character
references and JSON's escapes, escapes inside escapes (:func:`unescaped`)."""

from __future__ import annotations

import html
import re
import urllib.parse

from ._noise import is_noise

_JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_SIMPLE = re.compile(r'\\([nrt"/\\])')
_JSON_CHARS = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "/": "/", "\\": "\\"}
MAX_UNESCAPE_PASSES = 3
"""Escapes read inside escapes (``%2549gnore`` is ``%49gnore`` is ``Ignore``), at most this deep."""


def unescaped(text: str) -> str | None:
    """``text`` as the agent reads it where it is written in escapes (a URL's or a form's
    percent-encoding, ``+`` for a space in a text with none; HTML character references,
    ``&#73;gnore``, ``&lt;INFORMATION&gt;``; JSON's escapes left in a text, ``\\u0049``, ``\\n``; escapes
    inside escapes up to :data:`MAX_UNESCAPE_PASSES` deep), or ``None`` where it holds none
    that stand for anything. A model reads through them; the markers are looked for in both.
    Linear, one scan a pass."""
    if (
        "%" not in text
        and "&" not in text
        and "\\" not in text
        and not ("+" in text and " " not in text)
    ):
        return None
    out = text
    for _ in range(MAX_UNESCAPE_PASSES):
        was = out
        if "+" in out and " " not in out and not is_noise(out):  # base64's + is no space
            out = out.replace("+", " ")
        if "%" in out:
            out = urllib.parse.unquote(out)
        if "&" in out:
            out = html.unescape(out)
        if "\\u" in out:
            out = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), out)
            if _SURROGATE.search(out):  # a pair of escapes stands for one character (a tag)
                out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if "\\" in out:  # JSON's own (a JSON text read raw: a MIME body's lines, quotes)
            out = _JSON_SIMPLE.sub(lambda m: _JSON_CHARS[m.group(1)], out)
        if out == was:
            break
    return out if out != text else None


__all__ = ["MAX_UNESCAPE_PASSES", "unescaped"]
