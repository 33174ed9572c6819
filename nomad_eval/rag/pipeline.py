"""The retrieval path of the RAG pipeline under test; each stage is a config switch. Query expansion spells out
known acronyms (a glossary file) beside themselves, so both forms can match."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import yaml

from nomad_eval.rag import rerank
from nomad_eval.rag.rerank import Candidate, ChunkWords
from nomad_eval.rag.rewrite import check_rule


def load_glossary(path: Path) -> dict[str, str]:
    data = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a glossary is a mapping of ACRONYM: spelled-out form")
    return {str(k): str(v) for k, v in data.items()}


def expand(query: str, glossary: dict[str, str]) -> str:
    """Case-sensitive on the acronym, so the word 'co' in 'cook' or 'co-op' is not taken for CO."""
    out, lowered = query, query.lower()
    for acronym, spelled in glossary.items():
        if acronym not in out or spelled.lower() in lowered:  # the pattern below can only match the acronym's text
            continue
        out = re.sub(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", f"{acronym} ({spelled})", out)
    return out


@dataclass(frozen=True)
class RetrievedChunk:
    rank: int
    chunk_id: str
    doc_id: str
    score: float | None         # raw cosine; None when a user's own pipeline gives only one score
    final_score: float
    heading: str = ""
    text: str = ""


@dataclass
class Retrieval:
    query: str
    expanded_query: str
    chunks: list[RetrievedChunk]
    candidates: list[RetrievedChunk] = field(default_factory=list)  # the whole reranked pool, for separation
    timings: dict[str, float] = field(default_factory=dict)


class Searcher(Protocol):
    """What a pipeline may ask of the harness: embed a query, search the tagged points."""

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def search(self, vector: np.ndarray, limit: int) -> list[Candidate]: ...


@dataclass(frozen=True)
class Stages:
    glossary: bool = True
    boosts: bool = True
    same_doc_penalty: bool = True


class Pipeline:
    # Every value comes from the pipeline config (conf/pipeline/default.yaml), the one place its defaults are
    # written. The chunker's keys are the runtime's (harness/runtime.py); the pipeline takes them to accept the
    # whole section.
    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int,
        whole_document: bool,
        top_k: int,
        candidate_multiplier: int,
        min_final_score: float,
        glossary: bool,
        glossary_file: str | None,
        rerank: bool,
        term_boost: float,
        keyword_boost: float,
        heading_boost: float,
        same_doc_penalty: float,
        history: str,
        history_turns: int,
    ) -> None:
        check_rule(history, history_turns)
        self.history = history  # how a conversation becomes the query (rag/rewrite.py), in every tier
        self.history_turns = history_turns
        self.top_k = top_k
        self.candidates = max(top_k, candidate_multiplier * top_k)
        self.min_final_score = min_final_score
        # Loaded even when the stage is off, so an ablation can still score glossary on vs off.
        self.glossary_terms = load_glossary(Path(glossary_file)) if glossary_file else {}
        self.stages = Stages(glossary=glossary, boosts=rerank, same_doc_penalty=rerank)
        self.term_boost = term_boost
        self.keyword_boost = keyword_boost
        self.heading_boost = heading_boost
        self.same_doc_penalty = same_doc_penalty
        # A run's questions rerank the same chunks over and over: each chunk's words are split once per run (this
        # object lives for one run), not once per question that retrieves it.
        self._words: dict[tuple[str, str, str], ChunkWords] = {}

    def _chunk_words(self, c: Candidate) -> ChunkWords:
        key = (c.chunk_id, c.heading, c.text)
        if key not in self._words:
            self._words[key] = rerank.chunk_words(c)
        return self._words[key]

    def expand(self, query: str, stages: Stages | None = None) -> str:
        st = stages or self.stages
        return expand(query, self.glossary_terms) if st.glossary and self.glossary_terms else query

    def rank(self, query: str, pool: list[Candidate], stages: Stages | None = None) -> list[RetrievedChunk]:
        """Score one candidate pool; ablations call this several times on the same search."""
        st = stages or self.stages
        if st.boosts:
            terms, keys = rerank.query_terms(query), rerank.keywords(query)
            scored = [(c, rerank.boosted(c, terms, keys, self.term_boost, self.keyword_boost,
                                         self.heading_boost, self._chunk_words(c))) for c in pool]
        else:
            scored = [(c, c.score) for c in pool]
        penalty = self.same_doc_penalty if st.same_doc_penalty else 0.0
        ranked = rerank.penalise_same_doc(scored, penalty)
        return [
            RetrievedChunk(i, s.candidate.chunk_id, s.candidate.doc_id, s.candidate.score, s.final_score,
                           s.candidate.heading, s.candidate.text)
            for i, s in enumerate(ranked, 1)
        ]

    def cut(self, ranked: list[RetrievedChunk]) -> list[RetrievedChunk]:
        kept = [c for c in ranked if c.final_score >= self.min_final_score][: self.top_k]
        # A chunk whose rank does not change is kept as it is (they are frozen): usually none is dropped.
        return [c if c.rank == i else replace(c, rank=i) for i, c in enumerate(kept, 1)]

    def retrieve(self, query: str, searcher: Searcher, stages: Stages | None = None) -> Retrieval:
        t0 = time.perf_counter()
        expanded = self.expand(query, stages)
        vec = searcher.embed_queries([expanded])[0]
        t1 = time.perf_counter()
        pool = searcher.search(vec, self.candidates)
        t2 = time.perf_counter()
        ranked = self.rank(expanded, pool, stages)
        chunks = self.cut(ranked)
        t3 = time.perf_counter()
        return Retrieval(query, expanded, chunks, ranked, {"embed": t1 - t0, "search": t2 - t1, "rerank": t3 - t2})
