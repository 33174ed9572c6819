"""Reranking of store candidates: boosts scaled by the cosine, then a same-document penalty."""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i if in is it its me my of on or should that the "
    "their them then there these this to was what when where which who why will with you your".split()
)


@dataclass(frozen=True)
class Candidate:
    chunk_id: str
    doc_id: str
    heading: str
    text: str
    score: float  # raw cosine from the store


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    final_score: float


def query_terms(query: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(query.lower()):
        if w not in _STOP and (len(w) > 2 or w.isdigit()):
            seen.setdefault(w)
    return tuple(seen)


def keywords(query: str) -> tuple[str, ...]:
    """Rare tokens worth an exact match: numbers, acronyms and model names such as HX-7."""
    out: dict[str, None] = {}
    for w in _WORD.findall(query):
        if any(ch.isdigit() for ch in w) or (len(w) > 1 and w.isupper()):
            out.setdefault(w.lower())
    return tuple(out)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


ChunkWords: TypeAlias = tuple[frozenset[str], frozenset[str]]


def chunk_words(c: Candidate) -> ChunkWords:
    """The words of a candidate's text and of its heading: what the boosts match query terms against."""
    return _words(c.text), _words(c.heading)


def _share(terms: Sequence[str], words: frozenset[str]) -> float:
    return sum(1 for t in terms if t in words) / len(terms) if terms else 0.0


def boosted(c: Candidate, terms: Sequence[str], keys: Sequence[str], term_boost: float, keyword_boost: float,
            heading_boost: float, words: ChunkWords | None = None) -> float:
    text_words, heading_words = words or chunk_words(c)
    bonus = term_boost * _share(terms, text_words) + keyword_boost * _share(keys, text_words)
    bonus += heading_boost * _share(terms, heading_words)
    return c.score * (1.0 + bonus)


def order(scored: list[tuple[Candidate, float]]) -> list[tuple[Candidate, float]]:
    """Highest score first; ties broken by identifier in descending order, the way trec_eval breaks them,
    so our ranks and pytrec_eval's agree even on tied scores."""
    by_id = sorted(scored, key=lambda cs: cs[0].chunk_id, reverse=True)
    return sorted(by_id, key=lambda cs: -cs[1])


def penalise_same_doc(scored: list[tuple[Candidate, float]], penalty: float) -> list[Scored]:
    """Greedy pick: each further chunk of an already-picked document loses `penalty` per earlier one.

    The result is in descending final score, so the order a user sees and the scores agree. Ties go to the
    candidate earlier in `order`. A document's chunks share their penalty, so its best remaining chunk is always
    its next in `order`: one heap entry per document (its next chunk's penalised score) replaces the scan of every
    remaining candidate at every pick, O(n log d) rather than O(n^2); with no penalty `order` is the answer.
    """
    pool = order(scored)
    if penalty == 0:
        return [Scored(c, s) for c, s in pool]
    queues: dict[str, list[int]] = {}
    for i, (c, _) in enumerate(pool):
        queues.setdefault(c.doc_id, []).append(i)
    heap = [(-pool[q[0]][1], q[0], doc, 0) for doc, q in queues.items()]  # (-score, position, doc, picked)
    heapq.heapify(heap)
    picked: list[Scored] = []
    while heap:
        neg, i, doc, taken = heapq.heappop(heap)
        picked.append(Scored(pool[i][0], -neg))
        if taken + 1 < len(queues[doc]):
            j = queues[doc][taken + 1]
            heapq.heappush(heap, (-(pool[j][1] - penalty * (taken + 1)), j, doc, taken + 1))
    return picked
