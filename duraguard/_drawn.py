"""Text as a model reads it where it is drawn otherwise: letters drawn like Latin ones, and text
hidden in Unicode tag characters.

The injection markers (:mod:`duraguard._noting`) look for words that address an agent. A writer
who wants them missed draws the words with letters of another script or block that look the
same (``Ignоre`` with a Cyrillic ``о``, ``ɪɢɴᴏʀᴇ`` in small capitals, ``🅸🅶🅽🅾🆁🅴``), or writes
them in tag characters, which draw as nothing and which a model reads as the ASCII they mirror
("ASCII smuggling"). Both are read here as the plain text they stand for.
"""

from __future__ import annotations

import re

LOOKALIKES: dict[int, int] = (
    str.maketrans(
        "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u04cf\u0261"
        "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405"
        "\u03b1\u03bf\u03bd\u03b9\u03ba\u03c1\u03c5"
        "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a7\u03a5"
        # small capitals (no compatibility form makes them plain letters)
        "\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f\u1d0d\u0274\u1d0f"
        "\u1d18\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21\u028f\u1d22"
        # the dotless i, Armenian and Cherokee letters drawn like Latin ones
        "\u0131\u0585\u057d\u0581\u0570\u0578\u0584\u0566"
        "\u13aa\u13f4\u13df\u13ac\u13bb\u13c6\u13ab\u13e6\u13b7\u13e2\u13da\u13a2\u13d9\u13b3\u13c3"
        "\u04c0\u0269\u13a5\u0251\u04bb\u03f2"
        # more Cherokee letters, and Latin letters with a hook that no compatibility form plains
        "\u13a0\u13a1\u13c0\u13de\u13cf\u0257\u0256\u0253\u0199\u0266\u0271\u0272\u0282"
        "\u01ad\u028b\u0225",
        "aeopcyxijsdqwlgABEKMHOPCTXIJSaovikpuABEZHIKMNOPTXYabcdefghijklmnoprstuvwyz"
        "ioughnpqABCEHIJKMPSTVWZIiiahcDRGLbddbkhmnstvz",
    )
    | {
        # negative circled and negative squared letters, A to Z each (not regional indicators: a flag
        # is two of them, and Anguilla's reads AI)
        first + i: ord("A") + i
        for first in (0x1F150, 0x1F170)
        for i in range(26)
    }
    | {
        # Persian yeh and keheh, and the alef maksura, read as the Arabic yeh and kaf they are
        # drawn like (a Persian keyboard writes Arabic with them, an Arabic one Persian)
        0x06CC: 0x064A,
        0x06A9: 0x0643,
        0x0649: 0x064A,
        # d with a stroke (Vietnamese, Croatian): no compatibility form makes it a d
        0x0111: ord("d"),
        0x0110: ord("D"),
    }
    | {
        # bars drawn like a pipe, as in a chat template's ``<|im_start|>`` written ``<∣im_start∣>``
        c: ord("|")
        for c in (0x01C0, 0x05C0, 0x2223, 0x2502, 0x23D0, 0x2758, 0x2759, 0xFFE8)
    }
)
"""Letters drawn like Latin ones, read as the Latin letters (after NFKD, which already makes
fullwidth, styled, circled and squared letters plain): Cyrillic and Greek look-alikes
(``Ign\u043ere`` is drawn "Ignore"), the dotless i, Armenian and Cherokee look-alikes, Latin
letters with a hook (``\u0257elete``), small capitals, negative circled and squared letters; the
Persian and Arabic forms of one letter as one; and bars drawn like a pipe. Cherokee letters
read as capitals: case folding leaves them as they are."""

PARENTHESIZED: dict[int, int] = {0x249C + i: ord("a") + i for i in range(26)}
"""Parenthesized small letters (``⒤⒢⒩⒪⒭⒠``), read as the letters: NFKD would make each one
``(i)``, three characters a word is not read through. Applied before NFKD."""

TAG_RUN = re.compile("[\U000e0020-\U000e007e]+")
"""Unicode tag characters that mirror printable ASCII: drawn as nothing, read by a model as the
text they mirror (an order smuggled into a page, an email, a file name)."""
TAG_ASCII = {c: c - 0xE0000 for c in range(0xE0020, 0xE007F)}


HIDDEN = re.compile(
    "["
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"  # format and default-ignorable code points
    "\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"  # marks
    # Arabic vowel points and the stretching stroke (tatweel), Hebrew points: written or not,
    # the word is the same
    "\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"
    "]"
)
"""What renders as nothing (or as a mark on the letter before it) in a text that NFKD made of
letters and marks: dropped before the markers are looked for (``Ig\u200bnore``, ``I\u0301gnore``)."""


def tag_readings(text: str) -> list[str]:
    """``text`` as a model reads what it hides in tag characters: with each read where it
    stands (so hidden and visible text read as one, and invisible characters between hidden
    ones are dropped by the readings after), and the hidden text alone, every run of it joined;
    ``[]`` where it hides none."""
    if text.isascii():
        return []
    runs = TAG_RUN.findall(text)
    return [text.translate(TAG_ASCII), "".join(runs).translate(TAG_ASCII)] if runs else []


__all__ = ["HIDDEN", "LOOKALIKES", "PARENTHESIZED", "TAG_ASCII", "TAG_RUN", "tag_readings"]
