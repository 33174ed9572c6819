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
        # A kept search's hits as the harness scores them (StoreSearcher.search), built once: rebuilding them in
        # every job was a fifth of a warm threshold-sweep job's search.
        self.pools: dict[tuple[str, str, bytes, int], list[Pooled]] = {}

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
        self.pools.clear()
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
        if self.store_key is None:
            pool = [_pooled(h) for h in self._hits(vector, limit)]
        else:
            vector = np.ascontiguousarray(vector, dtype=np.float32)
            key = (self.store_key, self.fingerprint, vector.tobytes(), limit)
            if (kept := SHARED.pools.get(key)) is None:
                hits = self._hits(vector, limit)  # keeps the uncut search in SHARED, within its bound
                if (uncut := SHARED.get(self.store_key, self.fingerprint, vector, limit)) is None:
                    return self._guarded([_pooled(h) for h in hits])  # past the bound: nothing kept to pool
                kept = SHARED.pools[key] = [_pooled(h) for h in uncut]
            pool = kept if self.threshold is None else [e for e in kept if e[2].score > self.threshold]
        return self._guarded(pool)

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
