"""Base64 and base32 cut into groups (``SWdub3Jl IGFsbCBw...``, ``SWdub3Jl,IGFsbCBw``,
``"SWdub3Jl","IGFsbCBw"``): where the groups are, read joined (:func:`groups_run`), for
:mod:`duraguard._encoded` to decode."""

from __future__ import annotations

import bisect
import re

_MARK = r"[0-9+/]|(?<=[A-Za-z0-9+/])[A-Z]"
_SEP = r"(?:\s{1,4}|\"?\s{0,3}[,;]\s{0,3}\"?|\.\s{1,3}|\s{1,3}[|-]\s{1,3})"
_GROUPS = re.compile(
    r"(?<![A-Za-z0-9+/])(?=[A-Za-z0-9+/]{4,80}(?![A-Za-z0-9+/]))"
    rf"[A-Za-z0-9+/]*?(?:{_MARK})[A-Za-z0-9+/]*"
    rf"(?:{_SEP}[A-Za-z0-9+/]{{4,80}}+){{3,}}+(?:{_SEP}[A-Za-z0-9+/]{{1,3}}(?![A-Za-z0-9+/]))?={{0,6}}"
)
"""Base64 or base32 cut into groups by white space (spaces, line breaks, a blank line), by a
comma or a semicolon with or without spaces or quotes about it (``a,b``, ``a , b``, a quoted
CSV row ``"a","b"``), by ``. ``, `` - `` or `` | ``: from a group that looks like base64 (:data:`_GROUP_MARK`;
prose has few), at least three more of four characters or more, the last may be shorter; read
joined where most of its groups look like base64 (:func:`groups_run`). A match is tried where a
group starts, and the groups after it are taken whole (possessive): linear."""
_SEP_BACKWARDS = r"(?:\s{1,4}|\"?\s{0,3}[,;]\s{0,3}\"?|\s{1,3}\.|\s{1,3}[|-]\s{1,3})"
_GROUPS_BEFORE = re.compile(rf"(?:{_SEP_BACKWARDS}[A-Za-z0-9+/]{{4,80}}+){{1,3}}")
"""Up to three groups before a run of :data:`_GROUPS` (matched backwards): it is read from each."""
_GROUP_MARK = re.compile(_MARK)
"""What a group of base64 has and a word rarely does: a digit, ``+`` or ``/``, a capital inside."""
_GROUP = re.compile(r"[A-Za-z0-9+/=]+")
_B32_GROUPS = re.compile(r"[A-Z2-7\s,;.\"|-]+=*|[a-z2-7\s,;.\"|-]+=*")


def groups_run(text: str, inside: list[tuple[int, int]]) -> list[str]:
    """The runs of base64 (or base32) cut into groups in ``text``, joined, where most groups look
    like base64 (:data:`_GROUP_MARK`) or all like base32 with a digit, and three are no number:
    not a sentence of words, nor a table's row of numbers; the words after a run left out. A run
    inside one at ``inside`` (a MIME body) is read there, not again; each run is read also from
    up to three groups before it (:data:`_GROUPS_BEFORE`)."""
    out = []
    starts = [a for a, _ in inside]
    for m in _GROUPS.finditer(text):
        k = bisect.bisect_right(starts, m.start()) - 1
        if k >= 0 and inside[k][1] >= m.end():
            continue
        groups = _GROUP.findall(m.group())
        marked = [i for i, g in enumerate(groups) if _GROUP_MARK.search(g)]
        b32 = _B32_GROUPS.fullmatch(m.group()) is not None
        kept = groups if b32 else groups[: marked[-1] + 2]  # the last group may be a short end
        if not b32 and len(marked) * 4 < len(kept) * 3:
            continue
        if sum(not g.isdigit() for g in kept) < 3:
            continue  # a row of numbers: base64 of an order has groups of letters (digits pad it)
        before = _GROUPS_BEFORE.match(text[max(0, m.start() - 255) : m.start()][::-1])
        lead = _GROUP.findall(before.group()[::-1]) if before else []
        out += ["".join(lead[len(lead) - j :] + kept) for j in range(len(lead) + 1)]
    return out


__all__ = ["groups_run"]
