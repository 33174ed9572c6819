"""Searches shared between the runs of one process: the same candidates as asking the store, threshold included."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from nomad_eval.backends.base import Hit, StoredPoint
from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.backends.minilm import MiniLMEmbedder
from nomad_eval.harness.search import SHARED, SharedSearches, StoreSearcher

DIM = 32
TAG = "__nomad_eval__"


def _store(path: Path, fingerprint: str = "fp-a") -> tuple[EdgeStore, np.ndarray]:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((300, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = EdgeStore(str(path), dim=DIM)
    store.upsert([StoredPoint(str(uuid.UUID(int=i + 1)), v, {"collection": TAG, "fingerprint": fingerprint,
                                                             "doc_id": f"d{i % 40}", "chunk_id": f"d{i % 40}#{i}",
                                                             "text": f"chunk {i}"}) for i, v in enumerate(vecs)])
    queries = rng.standard_normal((12, DIM)).astype(np.float32)
    return store, queries / np.linalg.norm(queries, axis=1, keepdims=True)


def _searcher(store: EdgeStore, tmp: Path, threshold: float | None, key: str | None) -> StoreSearcher:
    emb = CachedEmbedder(MiniLMEmbedder(dim=DIM), EmbeddingCache(tmp / "emb.sqlite"))  # never asked to embed here
    return StoreSearcher(emb, store, threshold, {f"d{i}" for i in range(40)}, "fp-a", key)


def _pairs(cands: list) -> list[tuple[str, float]]:  # type: ignore[type-arg]
    return [(c.chunk_id, c.score) for c in cands]


def test_shared_searches_equal_the_stores_own_answer_at_every_threshold(tmp_path: Path) -> None:
    SHARED.clear()
    store, queries = _store(tmp_path / "edge")
    try:
        direct = _searcher(store, tmp_path, None, None)
        # One threshold is exactly a returned score: the store drops a score equal to it, and so must the cut.
        tie = direct.search(queries[0], 10)[3].score
        for threshold in (None, 0.0, 0.2, tie):
            plain = _searcher(store, tmp_path, threshold, None)
            shared = _searcher(store, tmp_path, threshold, "k")
            for q in queries:
                assert _pairs(shared.search(q, 10)) == _pairs(plain.search(q, 10))
        assert len(_searcher(store, tmp_path, tie, "k").search(queries[0], 10)) == 3
    finally:
        store.close()
    # The store is closed: only the shared results can answer, for any threshold, and only for their own key,
    # fingerprint and limit.
    again = _searcher(store, tmp_path, 0.1, "k")
    assert _pairs(again.search(queries[1], 10)) == [(c, s) for c, s in _pairs(
        _searcher(store, tmp_path, None, "k").search(queries[1], 10)) if s > 0.1]
    with pytest.raises(Exception):  # noqa: B017 - the closed engine's own error, whatever its type
        _searcher(store, tmp_path, 0.1, "another-store").search(queries[1], 10)
    with pytest.raises(Exception):  # noqa: B017
        again.search(queries[1], 11)


def test_shared_searches_keep_nothing_past_their_bound() -> None:
    shared = SharedSearches(max_hits=3)
    vec = np.ones(4, dtype=np.float32)
    hits = [Hit(str(i), 1.0 - i / 10, {"doc_id": "d"}) for i in range(5)]
    shared.put("k", "fp", vec, 5, hits)
    assert shared.get("k", "fp", vec, 5) is None
    shared.put("k", "fp", vec, 2, hits[:2])
    assert [(h.point_id, h.score) for h in shared.get("k", "fp", vec, 2) or []] == [("0", 1.0), ("1", 0.9)]
