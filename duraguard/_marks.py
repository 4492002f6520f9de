"""Piles of combining marks, cut before a text is normalised.

NFKC and NFKD put a run of combining marks in canonical order by insertion, in time that grows
with the square of the run (64 KiB of marks after one letter took 4 s, 256 KiB 69 s), in C,
where no deadline can stop it. A pile of marks past a few draws nothing more for a reader, so
every run is cut to :data:`MAX_MARKS` first (:func:`cut_mark_runs`; the content checks cap
their clusters the same way, :func:`duraguard.checks._text.normalise`).
"""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_MARKS = 32
"""Combining marks kept in a row before a text is normalised: by :func:`cut_mark_runs`, and on
one character by :func:`duraguard.checks._text.normalise`."""


@functools.cache
def mark_run() -> re.Pattern[str]:
    """A run of more than :data:`MAX_MARKS` code points that combine (canonical class not 0),
    the class built once a process from the Unicode database."""
    ranges: list[tuple[int, int]] = []
    for cp in range(0x110000):
        if unicodedata.combining(chr(cp)):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    klass = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"([{klass}]{{{MAX_MARKS}}})[{klass}]+")


def cut_mark_runs(text: str) -> str:
    """``text`` with every run of combining marks cut to :data:`MAX_MARKS`: NFKD orders a run
    in time that grows with its square (64 KiB of marks after one letter took seconds), and a
    pile of marks past a few draws nothing more. Texts too short for that to cost are left."""
    if len(text) < 1024 or text.isascii():
        return text
    return mark_run().sub(r"\1", text)
