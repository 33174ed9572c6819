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


class SharedSearches:
    """Search results kept for the rest of the process, so the jobs of an in-process sweep search each question once.

    A fingerprint names the store's content exactly (documents, chunker, embedder), so for one store location and
    fingerprint a query vector's top `limit` never changes between jobs. Each is kept without the score threshold
    and cut afterwards, as the store cuts (a score equal to the threshold is dropped), so a threshold sweep
    shares them too. Bounded by `max_hits` in all; past it, searches are simply not kept.
    """

    def __init__(self, max_hits: int = 2_000_000) -> None:
        self.max_hits = max_hits
        self._hits = 0
        self._results: dict[tuple[str, str, bytes, int], list[tuple[str, float]]] = {}
        self._payloads: dict[tuple[str, str], dict[str, Any]] = {}  # point payloads, held once per store and point

    def get(self, store_key: str, fingerprint: str, vector: np.ndarray, limit: int) -> list[Hit] | None:
        found = self._results.get((store_key, fingerprint, vector.tobytes(), limit))
        if found is None:
            return None
        return [Hit(pid, score, self._payloads[(store_key, pid)]) for pid, score in found]

    def put(self, store_key: str, fingerprint: str, vector: np.ndarray, limit: int, hits: list[Hit]) -> None:
        if self._hits + len(hits) > self.max_hits:
            return
        self._hits += len(hits)
        for h in hits:
            self._payloads.setdefault((store_key, h.point_id), h.payload)
        self._results[(store_key, fingerprint, vector.tobytes(), limit)] = [(h.point_id, h.score) for h in hits]

    def clear(self) -> None:
        self._results.clear()
        self._payloads.clear()
        self._hits = 0


SHARED = SharedSearches()


class StoreSearcher:
    def __init__(self, embedder: CachedEmbedder, store: Store, threshold: float | None, doc_ids: set[str],
                 fingerprint: str, store_key: str | None = None) -> None:
        """`store_key` names the store's location (see Runtime.store_key); given, searches are shared through
        SHARED with later runs in this process. None: every search goes to the store."""
        self.fingerprint = fingerprint
        self.embedder = embedder
        self.store = store
        self.threshold = threshold
        self.doc_ids = doc_ids
        self.store_key = store_key

    def _hits(self, vector: np.ndarray, limit: int) -> list[Hit]:
        if self.store_key is None:
            return self.store.search(vector, limit, self.threshold, self.fingerprint)
        vector = np.ascontiguousarray(vector, dtype=np.float32)
        hits = SHARED.get(self.store_key, self.fingerprint, vector, limit)
        if hits is None:
            hits = self.store.search(vector, limit, None, self.fingerprint)
            SHARED.put(self.store_key, self.fingerprint, vector, limit, hits)
        return hits if self.threshold is None else [h for h in hits if h.score > self.threshold]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_queries(texts)

    def search(self, vector: np.ndarray, limit: int) -> list[Candidate]:
        # Filter on the eval tag and the fingerprint, inside the store's query: other configurations' chunks
        # share the store and must never be scored for this one.
        hits = self._hits(vector, limit)
        out = []
        for h in hits:
            p = h.payload
            doc = p.get("doc_id")
            # Leak guard: a point that is not a chunk of the configured corpus must never be scored.
            if doc not in self.doc_ids:
                source = p.get("path") or p.get("chunk_id") or f"point {h.point_id}"
                raise LeakError(
                    f"leak guard: retrieved point {h.point_id} from {source!r} (doc_id {doc!r}) is not a document "
                    "of the configured corpus; the store holds foreign points under the eval tag"
                )
            out.append(Candidate(str(p.get("chunk_id")), str(doc), str(p.get("heading", "")), str(p.get("text", "")),
                                 h.score))
        return out
