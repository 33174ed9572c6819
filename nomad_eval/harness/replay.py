"""Retrieval replayed in memory for attribution: the run's corpus and settings with some of the changes since the
baseline reverted, searched exactly over cached vectors (no store), so each variant costs one matrix product.

A variant's chunks and queries embed through the run's embedding cache: the run's own texts are cached already,
and so are the baseline's when it was run on this machine; only texts neither side embedded load the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nomad_eval.backends.cache import CachedEmbedder
from nomad_eval.data.corpus import Document
from nomad_eval.harness.cosines import _unit
from nomad_eval.rag.chunking import Chunk, ChunkerParams, chunk_corpus
from nomad_eval.rag.pipeline import Pipeline, Retrieval
from nomad_eval.rag.rerank import Candidate


@dataclass(frozen=True)
class World:
    """One variant of the system: the documents, how they are chunked, the pipeline and the cosine threshold."""

    documents: tuple[Document, ...]
    chunker: ChunkerParams
    pipeline: Pipeline
    threshold: float | None


class MemorySearcher:
    """StoreSearcher's two calls over chunks held in memory: exact cosine, best first, ties in chunk order."""

    def __init__(self, embedder: CachedEmbedder, chunks: Sequence[Chunk], threshold: float | None) -> None:
        self.embedder = embedder
        self.chunks = list(chunks)
        self.threshold = threshold
        texts = [c.text for c in self.chunks]
        self.vectors = _unit(np.asarray(embedder.embed_documents(texts), dtype=np.float32)) if texts \
            else np.zeros((0, 1), dtype=np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_queries(texts)

    def search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        if not self.chunks:
            return []
        q = _unit(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
        scores = self.vectors @ q
        order = np.argsort(-scores, kind="stable")[:limit]
        return [Candidate(c.chunk_id, c.doc_id, c.heading, c.text, float(scores[i]))
                for i in order if self.threshold is None or scores[i] >= self.threshold
                for c in [self.chunks[i]]]


def replay(world: World, embedder: CachedEmbedder, queries: Sequence[str]) -> list[Retrieval]:
    """Every query through the world's pipeline over its own chunks."""
    searcher = MemorySearcher(embedder, chunk_corpus(list(world.documents), world.chunker), world.threshold)
    embedder.embed_queries([world.pipeline.expand(q) for q in queries])  # one batch, not one call per question
    return [world.pipeline.retrieve(q, searcher) for q in queries]
