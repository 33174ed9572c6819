"""The harness side of a search: cached query embeddings and the eval-tag filter inside the store query."""

from __future__ import annotations

import numpy as np

from nomad_eval.backends.base import Store
from nomad_eval.backends.cache import CachedEmbedder
from nomad_eval.base.errors import NomadError
from nomad_eval.rag.rerank import Candidate


class LeakError(NomadError):
    exit_code = 1


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
        hits = self.store.search(vector, limit, self.threshold, self.fingerprint)
        for h in hits:
            # Leak guard: a point that is not a chunk of the configured corpus must never be scored.
            if (doc := h.payload.get("doc_id")) not in self.doc_ids:
                source = h.payload.get("path") or h.payload.get("chunk_id") or f"point {h.point_id}"
                raise LeakError(
                    f"leak guard: retrieved point {h.point_id} from {source!r} (doc_id {doc!r}) is not a document "
                    "of the configured corpus; the store holds foreign points under the eval tag"
                )
        return [Candidate(str(h.payload.get("chunk_id")), str(h.payload.get("doc_id")),
                          str(h.payload.get("heading", "")), str(h.payload.get("text", "")), h.score) for h in hits]
