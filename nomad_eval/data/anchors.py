"""Evidence anchors: where in the corpus each golden's mustInclude patterns match, and what became of them.

A golden's answer is a fact its relevant documents state. Anchoring records, for every mustInclude pattern, the
document, the document's content hash, the matching sentence (the quote) and the match's character span. The
run's report and the baseline promoted from it carry these anchors, so a later run re-anchors against its own
corpus and tells a golden the knowledge base outgrew (its fact changed, moved to another document, or is gone)
from a retrieval that broke. Pure: documents and goldens in, records out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import regex
from pydantic import BaseModel, ConfigDict, Field

from nomad_eval.base.patterns import TIMEOUT_S, PatternError, compile_pattern
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden

MAX_ELSEWHERE = 8  # documents outside relevantDocIds recorded per pattern (all are counted)
_ENDS = ".!?"


class Anchor(BaseModel):
    """One document's first match of a pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    doc: str
    hash: str        # sha256 of the document's text, 12 hex (report.subject.documents' hash)
    match: str       # the text the pattern matched: the answer as the document words it
    quote: str       # the sentence holding the match
    start: int       # the match's character span in the document
    end: int
    relevant: bool   # the document is one of the golden's relevantDocIds


class PatternAnchors(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pattern: str
    found: list[Anchor] = Field(default_factory=list)  # every relevant document's match, then up to MAX_ELSEWHERE
    elsewhere: int = 0  # documents outside relevantDocIds the pattern matches (found lists the first of them)

    @property
    def relevant(self) -> list[Anchor]:
        return [a for a in self.found if a.relevant]

    @property
    def others(self) -> list[Anchor]:
        return [a for a in self.found if not a.relevant]


class GoldenAnchors(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    relevant: list[str]               # the golden's relevantDocIds when anchored
    patterns: list[PatternAnchors]


def doc_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def first_match(pattern: str, text: str) -> tuple[int, int] | None | Literal[False]:
    """The span of the pattern's first match in `text`; None when there is none; False when the search ran past
    the time limit or the pattern does not compile (unknown, never "no match"). Lint and anchoring both match
    through here, with the engine and flags the answers are scored with."""
    try:
        m = compile_pattern(pattern).search(text, timeout=TIMEOUT_S)
    except (PatternError, TimeoutError):
        return False
    return None if m is None else (m.start(), m.end())


def sentence(text: str, start: int, end: int) -> str:
    """The sentence around [start, end): from the previous sentence end (a stop followed by a space) or line break
    to the next, whitespace collapsed."""
    lo = start
    while lo > 0 and text[lo - 1] != "\n" and not (text[lo - 1].isspace() and lo > 1 and text[lo - 2] in _ENDS):
        lo -= 1
    hi = end
    while hi < len(text) and text[hi] != "\n" and not (text[hi] in _ENDS and (hi + 1 == len(text)
                                                                             or text[hi + 1].isspace())):
        hi += 1
    if hi < len(text) and text[hi] in _ENDS:
        hi += 1
    return " ".join(text[lo:hi].split()).lstrip("-*# ")


def sentences(text: str) -> list[str]:
    """The text's sentences as `sentence` quotes them: split at line breaks and at a stop followed by a space."""
    return [q for line in text.split("\n") for part in regex.split(r"(?<=[.!?])\s+", line)
            if (q := " ".join(part.split()).lstrip("-*# "))]


def _anchor(pattern: str, doc: Document, relevant: bool) -> Anchor | None:
    span = first_match(pattern, doc.text)
    if not span:
        return None
    s, e = span
    return Anchor(doc=doc.doc_id, hash=doc_hash(doc.text), match=doc.text[s:e], quote=sentence(doc.text, s, e),
                  start=s, end=e, relevant=relevant)


def anchor_goldens(goldens: Sequence[Golden], documents: Sequence[Document]) -> dict[str, GoldenAnchors]:
    """Every answerable golden's anchors in the corpus's own documents (distractors are never an answer)."""
    own = [d for d in documents if not d.distractor]
    found: dict[tuple[str, str], Anchor | None] = {}  # (pattern, doc): one search each, however many goldens

    def at(p: str, d: Document, relevant: bool) -> Anchor | None:
        if (p, d.doc_id) not in found:
            found[(p, d.doc_id)] = _anchor(p, d, False)
        a = found[(p, d.doc_id)]
        return None if a is None else a.model_copy(update={"relevant": relevant})

    out: dict[str, GoldenAnchors] = {}
    for g in goldens:
        if g.expect_refusal or not g.must_include:
            continue
        rel = set(g.relevant_doc_ids)
        patterns = []
        for p in g.must_include:
            hits = [a for d in own if (a := at(p, d, d.doc_id in rel)) is not None]
            mine, others = [a for a in hits if a.relevant], [a for a in hits if not a.relevant]
            patterns.append(PatternAnchors(pattern=p, found=mine + others[:MAX_ELSEWHERE], elsewhere=len(others)))
        out[g.id] = GoldenAnchors(relevant=list(g.relevant_doc_ids), patterns=patterns)
    return out


def unanchored(anchors: Mapping[str, GoldenAnchors]) -> list[str]:
    """"<id>: mustInclude '<p>'" for each pattern matching none of its golden's relevant documents."""
    return [f"{gid}: mustInclude '{p.pattern}' matches none of its relevant documents ({', '.join(a.relevant)})"
            for gid, a in anchors.items() for p in a.patterns if not p.relevant]


Status = Literal["intact", "moved", "relocated", "gone", "ambiguous", "unanchored"]
STALE: tuple[Status, ...] = ("gone", "relocated")
_ORDER: tuple[Status, ...] = ("unanchored", "intact", "moved", "ambiguous", "relocated", "gone")  # worst last


@dataclass(frozen=True)
class Evidence:
    """What became of one golden's evidence since the baseline."""

    id: str
    status: Status
    message: str = ""                       # for every status but intact and unanchored
    remap: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # relocated: relevantDocIds before → after
    answer: str = ""                        # the baseline's matched text of the pattern that decided the status
    quote: str = ""                         # ... and its sentence

    @property
    def stale(self) -> bool:
        return self.status in STALE


@dataclass(frozen=True)
class _Pattern:
    status: Status
    answer: str = ""
    quote: str = ""
    targets: tuple[str, ...] = ()  # relocated / ambiguous: the documents that now say it


def _pattern_status(base: PatternAnchors | None, run: PatternAnchors, unchanged: bool) -> _Pattern:
    """`base` None: the baseline has no anchors; `unchanged`: every relevant document is still in the corpus with
    the baseline's content, so a pattern found nowhere there is the suite's defect, not a change."""
    before = base.relevant if base is not None else []
    # Without the baseline's anchors, the run's own match elsewhere words the answer (else the pattern itself).
    first = before[0] if before else (run.others[0] if run.others else None)
    answer, quote = (first.match, first.quote if before else "") if first else (run.pattern, "")
    if (base is not None and not before) or (base is None and not run.relevant and unchanged):
        return _Pattern("unanchored", run.pattern)
    if run.relevant:
        same = any((a.doc, a.quote, a.start) == (b.doc, b.quote, b.start) for a in run.relevant for b in before)
        return _Pattern("intact" if same or base is None else "moved", answer, quote)
    return _found_elsewhere(before, run, answer, quote)


def _found_elsewhere(before: Sequence[Anchor], run: PatternAnchors, answer: str, quote: str) -> _Pattern:
    """A pattern no relevant document says any more: where else the corpus says it, if anywhere."""
    # Renamed, split and merged documents are found by their quotes: the sentence itself, in one other document.
    quoted = sorted({a.doc for a in run.others if a.quote in {b.quote for b in before}})
    if len(quoted) == 1:
        return _Pattern("relocated", answer, quote, tuple(quoted))
    if run.elsewhere == 0:
        return _Pattern("gone", answer, quote)
    others = tuple(sorted({a.doc for a in run.others}))
    return _Pattern("relocated" if run.elsewhere == 1 else "ambiguous", answer, quote, others)


def _what_happened(docs: Sequence[str], base_docs: Mapping[str, str] | None, run_docs: Mapping[str, str]) -> str:
    parts = []
    for d in docs:
        if d not in run_docs:
            parts.append(f"{d} removed")
        elif base_docs is not None and base_docs.get(d) not in (None, run_docs[d]):
            parts.append(f"{d} changed")
    return ", ".join(parts) or "its relevant documents no longer say it"


def reanchor(gid: str, base: GoldenAnchors | None, run: GoldenAnchors, base_docs: Mapping[str, str] | None,
             run_docs: Mapping[str, str]) -> Evidence:
    """One status for the golden: the worst of its patterns'. `base_docs` / `run_docs`: doc id -> content hash
    (report.subject.documents) of each side; `base` None when the baseline was promoted before anchors."""
    by_pattern = {p.pattern: p for p in base.patterns} if base is not None else {}
    unchanged = all(d in run_docs and (base_docs is None or base_docs.get(d, run_docs[d]) == run_docs[d])
                    for d in run.relevant)
    results = [_pattern_status(by_pattern.get(p.pattern) if base is not None else None, p, unchanged)
               for p in run.patterns if base is None or p.pattern in by_pattern]
    if not results:
        return Evidence(gid, "unanchored")
    worst = max(results, key=lambda r: _ORDER.index(r.status))
    what = _what_happened(run.relevant, base_docs, run_docs)
    shown = f'its answer "{worst.answer}"'
    if worst.status == "gone":
        return Evidence(gid, "gone", f"{gid}: {shown} is in no document any more ({what}): update or retire the "
                        "golden", answer=worst.answer, quote=worst.quote)
    if worst.status == "relocated":
        after = _remapped(base, run, results, run_docs)
        now = [d for d in after if d not in run.relevant] or list(worst.targets)
        return Evidence(gid, "relocated", f"{gid}: {shown} is now in {', '.join(now)} ({what}): remap "
                        f"relevantDocIds {list(run.relevant)} → {list(after)}", (tuple(run.relevant), after),
                        worst.answer, worst.quote)
    if worst.status == "ambiguous":
        return Evidence(gid, "ambiguous", f"{gid}: {shown} is no longer in {', '.join(run.relevant)} ({what}); "
                        f"{len(worst.targets)} other documents say it ({', '.join(worst.targets)}): choose its "
                        "relevantDocIds", answer=worst.answer, quote=worst.quote)
    if worst.status == "moved":
        return Evidence(gid, "moved", f"{gid}: {shown} moved within its documents (still matched)",
                        answer=worst.answer, quote=worst.quote)
    return Evidence(gid, worst.status)


def _remapped(base: GoldenAnchors | None, run: GoldenAnchors, results: Sequence[_Pattern],
              run_docs: Mapping[str, str]) -> tuple[str, ...]:
    """The relevantDocIds that hold the evidence now: each document still in the corpus that still says one of
    the patterns (or said none at the baseline either), in order, then the documents the evidence moved to."""
    saying = {a.doc for p in run.patterns for a in p.relevant}
    said = {a.doc for p in base.patterns for a in p.relevant} if base is not None else set()
    keep = [d for d in run.relevant if d in run_docs and (d in saying or d not in said)]
    moved = [t for r in results if r.status == "relocated" for t in r.targets]
    return tuple(dict.fromkeys([*keep, *moved]))


def reanchor_all(base: Mapping[str, GoldenAnchors] | None, run: Mapping[str, GoldenAnchors],
                 base_docs: Mapping[str, str] | None, run_docs: Mapping[str, str]) -> dict[str, Evidence]:
    """Each run golden's evidence status against the baseline's anchors (None or empty: a baseline promoted before
    anchors existed; the run's own anchors then decide). A golden the baseline never anchored is intact."""
    out = {}
    for gid, a in run.items():
        b = base.get(gid) if base else None
        if base and b is None:
            out[gid] = Evidence(gid, "intact")  # added since the baseline: nothing to have outgrown
            continue
        # A golden the suite itself changed (other documents or patterns) is judged on the run's anchors alone.
        same = b is not None and b.relevant == a.relevant and [p.pattern for p in b.patterns] == [
            p.pattern for p in a.patterns]
        out[gid] = reanchor(gid, b if same else None, a, base_docs, run_docs)
    return out
