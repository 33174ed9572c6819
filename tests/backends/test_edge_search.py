"""The embedded store's fast search (int8 scan, rescored) returns exactly what plain exact search returns."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from nomad_eval.backends.base import StoredPoint
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.base.shipped import build

TAG = "__nomad_eval__"
DIM = 64


def _clustered(n: int, seed: int) -> np.ndarray:
    """Points in tight clusters (like chunks of similar text), where near ties are common and int8 is tested."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 200, n)] + rng.normal(0, 0.15, (n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _fill(store: EdgeStore, vecs: np.ndarray, fingerprints: list[str], foreign: int = 0) -> None:
    pts = [StoredPoint(str(uuid.UUID(int=i + 1)), v, {"collection": TAG, "fingerprint": fingerprints[i % len(
        fingerprints)], "chunk_id": f"c{i}"}) for i, v in enumerate(vecs)]
    store.upsert(pts)
    if foreign:  # someone else's points in the same shard: the filter must then stay on
        rng = np.random.default_rng(5)
        raw = [store._qe.Point(str(uuid.UUID(int=10**9 + i)), rng.standard_normal(DIM).astype(np.float32),
                               {"collection": "user-notes"}) for i in range(foreign)]
        store._shard.update(store._qe.UpdateOperation.upsert_points(raw))
        store._written()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[EdgeStore, np.ndarray]:
    store = build("store", "edge", path=str(tmp_path_factory.mktemp("edge") / "s"), dim=DIM, fast_min_points=10_000)
    _fill(store, _clustered(20_000, 1), ["fp-a"])
    assert store.fast and store.prepare_search()
    info = store._shard.info()
    assert info.indexed_vectors_count == info.points_count == 20_000  # the int8 copies really exist
    queries = _clustered(60, 2)
    yield store, queries
    store.close()


def _pairs(hits: list) -> list[tuple[str, float]]:  # type: ignore[type-arg]
    return [(h.point_id, h.score) for h in hits]


@pytest.mark.parametrize("limit", [1, 10, 50])
def test_fast_search_is_the_exact_search(built: tuple[EdgeStore, np.ndarray], limit: int) -> None:
    store, queries = built
    for q in queries:
        fast, exact = store.search(q, limit, None, "fp-a"), store.search_exact(q, limit, None, "fp-a")
        assert _pairs(fast) == _pairs(exact)  # same ids, same order, bit-identical float scores
        assert [h.payload for h in fast] == [h.payload for h in exact]


def test_int8_scores_alone_would_differ(built: tuple[EdgeStore, np.ndarray]) -> None:
    """The rescoring is what makes the scores exact: without it the int8 scan's own scores come back."""
    store, queries = built
    qe = store._qe
    req = qe.QueryRequest(query=qe.Query.Nearest(queries[0]), limit=10, with_payload=False,
                          params=qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=False)))
    raw = [(str(p.id), float(p.score)) for p in store._shard.query(req)]
    assert raw != _pairs(store.search_exact(queries[0], 10, None, "fp-a"))


def test_threshold_cuts_where_exact_search_cuts(built: tuple[EdgeStore, np.ndarray]) -> None:
    store, queries = built
    for q in queries[:20]:
        exact = store.search_exact(q, 30, None, "fp-a")
        t = exact[12].score  # a threshold equal to a returned score: both must treat the boundary point alike
        assert _pairs(store.search(q, 30, t, "fp-a")) == _pairs(store.search_exact(q, 30, t, "fp-a"))
        assert 1 <= len(store.search(q, 30, t, "fp-a")) < 30


def test_filter_kept_when_other_points_share_the_shard(tmp_path: Path) -> None:
    store = build("store", "edge", path=str(tmp_path / "s"), dim=DIM, fast_min_points=5_000)
    _fill(store, _clustered(12_000, 3), ["fp-a", "fp-b"], foreign=500)
    assert store.prepare_search()
    for q in _clustered(20, 4):
        for fp in ("fp-a", "fp-b", None):
            fast = store.search(q, 10, None, fp)
            assert _pairs(fast) == _pairs(store.search_exact(q, 10, None, fp))
            assert all(h.payload["collection"] == TAG and fp in (None, h.payload["fingerprint"]) for h in fast)
    assert store._filter_needed == {"fp-a": True, "fp-b": True, None: True}
    store.close()


def test_small_and_old_shards_search_exactly(tmp_path: Path) -> None:
    """Below the size floor nothing is built; a shard made without the int8 copies never takes the fast path."""
    small = build("store", "edge", path=str(tmp_path / "small"), dim=DIM)
    _fill(small, _clustered(2_000, 6), ["fp-a"])
    assert small.fast and not small.prepare_search() and small._shard.info().indexed_vectors_count == 0
    small.close()
    old = build("store", "edge", path=str(tmp_path / "old"), dim=DIM, fast_search=False)
    _fill(old, _clustered(2_000, 6), ["fp-a"])
    old.close()
    reopened = build("store", "edge", path=str(tmp_path / "old"), dim=DIM, fast_min_points=1_000)
    assert not reopened.fast and not reopened.prepare_search()
    q = _clustered(1, 7)[0]
    assert _pairs(reopened.search(q, 10, None, "fp-a")) == _pairs(reopened.search_exact(q, 10, None, "fp-a"))
    reopened.close()


def test_what_one_session_wrote_is_there_after_another_only_searched(tmp_path: Path) -> None:
    """Close flushes only a shard this process changed; a session that only searched leaves it as it found it."""
    writer = build("store", "edge", path=str(tmp_path / "s"), dim=DIM)
    assert writer._changed  # created here
    _fill(writer, _clustered(600, 8), ["fp-a"])
    writer.close()
    q = _clustered(1, 9)[0]
    reader = build("store", "edge", path=str(tmp_path / "s"), dim=DIM)
    found = _pairs(reader.search(q, 10, None, "fp-a"))
    assert not reader._changed and reader.count("fp-a") == 600 and len(found) == 10
    reader.close()
    again = build("store", "edge", path=str(tmp_path / "s"), dim=DIM)
    assert again.count("fp-a") == 600 and _pairs(again.search(q, 10, None, "fp-a")) == found
    assert again.check() is None
    again.close()
