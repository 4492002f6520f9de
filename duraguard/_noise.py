"""Runs of base64's alphabet that read as no words (an image, a key, an id drawn as text): the
injection markers' pressure words and mentions of AI are not read in them, where their letters
make ``Ai`` and ``+ai/`` by chance (:mod:`duraguard._noting`), and a ``+`` in them is no space
(:mod:`duraguard._unescape`)."""

from __future__ import annotations

import re

_ALPHABET = "A-Za-z0-9+/_-"
_RUN = re.compile(rf"(?<![{_ALPHABET}])[{_ALPHABET}]{{16,}}+")


def is_noise(run: str) -> bool:
    """Whether a run of base64's alphabet reads as no words: an image, a key, an id. Few
    separators (a path, a form, snake_case have many), and few vowels among its letters
    (random letters have about one in five; words, camelCase too, about two in five)."""
    raw = run.encode("ascii", "replace")
    n = len(raw)
    seps = n - len(raw.translate(None, b"+/_-"))
    letters = n - seps - (n - len(raw.translate(None, b"0123456789")))
    vowels = n - len(raw.translate(None, b"aeiouAEIOU"))
    return seps * 10 < n and letters >= 8 and vowels * 100 < letters * 28


def quiet(text: str) -> str:
    """``text`` with its runs of noise (:func:`is_noise`) made a space: the pressure words and
    the mentions of AI are not read in them (their letters make ``Ai`` and ``+ai/`` by chance)."""
    return _RUN.sub(lambda m: " " if is_noise(m.group()) else m.group(), text)


def noisy(text: str) -> bool:
    return any(is_noise(m.group()) for m in _RUN.finditer(text))


__all__ = ["is_noise", "noisy", "quiet"]
