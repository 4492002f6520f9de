"""Reading the content-check corpora in ``tests/corpus/`` (one JSON object a line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def load(name: str) -> list[dict[str, Any]]:
    """Every line of ``tests/corpus/<name>`` as a dict (blank lines skipped)."""
    lines = (CORPUS / name).read_text(encoding="utf-8").split("\n")  # not splitlines: U+2028
    return [json.loads(line) for line in lines if line.strip()]


def cases(name: str, label: str) -> list[Any]:
    """``pytest.param`` per line, each named by its line number and its ``label`` field."""
    return [
        pytest.param(case, id=f"{i + 1}-{str(case.get(label, ''))[:40]!r}")
        for i, case in enumerate(load(name))
    ]
