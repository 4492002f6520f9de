"""How the demo prints: plain tables, in bold headers on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from duraguard.types import AuditRow

_TTY = sys.stdout.isatty()


def color(text: str, code: str) -> str:
    """``text`` in an ANSI colour on a terminal, plain otherwise."""
    return f"\033[{code}m{text}\033[0m" if _TTY else text


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [color(line, "1")]
    for r in rows:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)))
    return "\n".join(out)


def verdict_table(rows: Sequence[AuditRow]) -> str:
    body = []
    for r in rows:
        body.append(
            [
                str(r.turn),
                r.call_id or "-",
                r.tool or "-",
                r.placement,
                r.action,
                r.decided_by,
                r.outcome,
                r.approver or "-",
            ]
        )
    if not body:
        return "  (no verdict other than allow)"
    return "\n".join(
        "  " + line
        for line in table(
            body, ["turn", "call", "tool", "where", "action", "decided by", "outcome", "approver"]
        ).splitlines()
    )
