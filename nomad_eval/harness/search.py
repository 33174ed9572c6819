"""The harness side of a search: cached query embeddings and the eval-tag filter inside the store query."""

from __future__ import annotations

from typing import Any

import numpy as np

from nomad_eval.backends.base import Hit, Store
from nomad_eval.backends.cache import CachedEmbedder
from nomad_eval.base.errors import NomadError
from nomad_eval.rag.rerank import Candidate


class LeakError(NomadError):
    exit_code = 1


# One hit as scored: the payload's raw doc_id (for the leak guard), what names the point in a leak error, and the
# candidate handed to the pipeline.
Pooled = tuple[Any, str, Candidate]


class StoreSearcher:
    def __init__(self, embedder: CachedEmbedder, store: Store, threshold: float | None, doc_ids: set[str],
                 fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.embedder = embedder
        self.store = store
        self.threshold = threshold
        self.doc_ids = doc_ids

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_queries(texts)

    def search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        # Filter on the eval tag and the fingerprint, inside the store's query: other configurations' chunks
        # share the store and must never be scored for this one.
        return self._guarded([_pooled(h) for h in self.store.search(vector, limit, self.threshold, self.fingerprint)])

    def _guarded(self, pool: list[Pooled]) -> list[Candidate]:
        for doc, source, _ in pool:
            # Leak guard: a point that is not a chunk of the configured corpus must never be scored.
            if doc not in self.doc_ids:
                raise LeakError(
                    f"leak guard: retrieved {source} (doc_id {doc!r}) is not a document of the configured corpus; "
                    "the store holds foreign points under the eval tag"
                )
        return [c for _, _, c in pool]


def _pooled(h: Hit) -> Pooled:
    p = h.payload
    doc = p.get("doc_id")
    source = p.get("path") or p.get("chunk_id") or f"point {h.point_id}"
    return doc, f"point {h.point_id} from {source!r}", Candidate(
        str(p.get("chunk_id")), str(doc), str(p.get("heading", "")), str(p.get("text", "")), h.score)
