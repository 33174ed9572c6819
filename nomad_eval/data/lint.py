"""Golden lint: goldens that cannot discriminate a good answer from a bad one. Findings are warnings."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden
from nomad_eval.metrics.answer.patterns import search

REFUSALS = (
    "I don't have information about that in the available documents.",
    "I do not have that information.",
    "I don't know.",
    "Sorry, I cannot answer that.",
)
# Words so common that a pattern made of one of them passes almost any answer.
GENERIC = frozenset("""
time times use used water make made way day days hour hours minute minutes can will should must may not all any
some more most less good well need needs keep safe safety first one two three people person thing things part
place work first also only just very much many long short high low small large big right left yes no ok true
""".split())
_PLAIN_WORD = re.compile(r"^\\?b?([A-Za-z]+)\\?b?$")


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | None
    golden_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} [{self.golden_id}]: {self.message}"


def golden_lines(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            gid = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if isinstance(gid, str):
            out.setdefault(gid, n)
    return out


def lint(goldens: list[Golden], docs: list[Document], path: Path) -> list[Finding]:
    lines = golden_lines(path)
    out: list[Finding] = []

    def warn(g: Golden, msg: str) -> None:
        out.append(Finding(str(path), lines.get(g.id), g.id, msg))

    texts = [d.text for d in docs if not d.distractor]
    ids = {g.id for g in goldens}
    tag_counts = Counter(t for g in goldens for t in g.tags)
    for g in goldens:
        question = g.query  # earlier turns may state a figure on purpose (history-retention goldens)
        for p in g.must_include:
            word = _PLAIN_WORD.match(p)
            if word and word.group(1).lower() in GENERIC:
                warn(g, f"mustInclude {p!r} is one common word: almost any answer passes; pin it to a figure or phrase")
            if search(p, question):
                warn(g, f"mustInclude {p!r} matches the question itself: an answer that repeats it passes")
            if search(p, ""):
                warn(g, f"mustInclude {p!r} matches an empty answer (what the mock model gives without context)")
            refusal = next((r for r in REFUSALS if search(p, r)), None)
            if refusal:
                warn(g, f"mustInclude {p!r} matches a refusal ({refusal!r}): declining would pass")
            hits = sum(1 for t in texts if search(p, t))
            if texts and len(texts) >= 4 and hits / len(texts) > 0.5:
                warn(g, f"mustInclude {p!r} matches {hits} of {len(texts)} documents: it cannot tell them apart")
        if "acronym" in g.tags and f"{g.id}-spelled" not in ids:
            warn(g, f"acronym question without its spelled-out twin (expected id {g.id + '-spelled'!r})")
        for t in g.tags:
            if tag_counts[t] == 1:
                warn(g, f"tag {t!r} is used once in the suite: a per-tag mean of one question is noise")
    return out
