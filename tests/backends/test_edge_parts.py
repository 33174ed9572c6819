"""A store split in two parts (one searched by a worker process) answers exactly as one unsplit shard does."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from nomad_eval.backends import edge_parts
from nomad_eval.backends.base import Hit, StoredPoint
from nomad_eval.backends.edge import EdgeStore, open_part_1
from nomad_eval.base.errors import NomadError

TAG = "__nomad_eval__"
DIM = 32
N = 5_000
FPS = ["fp-a", "fp-a", "fp-b"]  # fp-b is a third of the points: its filter selects only some of each part


def _points(n: int, seed: int, start: int = 0) -> list[StoredPoint]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [StoredPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{start + i}")), v[i],
                        {"collection": TAG, "fingerprint": FPS[(start + i) % 3], "chunk_id": f"c{start + i}"})
            for i in range(n)]


def _queries(n: int = 15) -> np.ndarray:
    return np.random.default_rng(99).standard_normal((n, DIM)).astype(np.float32)


def _store(path: Path, split: bool = True) -> EdgeStore:
    # fast_min_points low so both use the int8 scan; the unsplit one keeps the default parallel floor (400k).
    return EdgeStore(str(path), dim=DIM, fast_min_points=1_000,
                     **({"parallel_min_points": 2_000} if split else {}))  # type: ignore[arg-type]


def _pairs(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(h.point_id, h.score) for h in hits]


def _ids(store: EdgeStore) -> list[str]:
    return [i for i, _, _ in store.scroll()]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EdgeStore, EdgeStore]]:
    root = tmp_path_factory.mktemp("parts")
    split, whole = _store(root / "split"), _store(root / "whole", split=False)
    pts = _points(N, 1)
    split.upsert(pts)
    whole.upsert(pts)
    yield split, whole
    split.close()
    whole.close()


def test_first_search_splits_the_store(pair: tuple[EdgeStore, EdgeStore]) -> None:
    split, whole = pair
    part1 = edge_parts.part_dir(split.root, DIM)
    assert split._parts is None and not part1.exists()
    split.search(_queries(1)[0], 10, None, None)
    assert split._parts is not None and split._parts.worker_pid is not None
    assert json.loads((split.root / f"dim-{DIM}.parts.json").read_text())["state"] == "split"
    here, there = split._count_here(tagged=False), split._parts.here().count(tagged=False)
    assert here > 2_000 and there > 2_000 and here + there == N == split.count()
    # every point in the part its id hashes to, and nowhere else
    assert all(edge_parts.part_of(i) == 0 for i in [i for i, _, _ in split.scroll()][:here])
    assert all(edge_parts.part_of(i) == 1 for i in _ids(split._parts.here()))
    assert sorted(_ids(split)) == sorted(_ids(whole))
    assert whole._parts is None and not edge_parts.part_dir(whole.root, DIM).exists()  # small stores: one shard


@pytest.mark.parametrize("fingerprint", [None, "fp-a", "fp-b"])
def test_split_search_is_the_unsplit_exact_search(pair: tuple[EdgeStore, EdgeStore], fingerprint: str | None
                                                  ) -> None:
    split, whole = pair
    for q in _queries():
        for limit in (1, 10, 60):
            ref = whole.search_exact(q, limit, None, fingerprint)
            assert _pairs(split.search(q, limit, None, fingerprint)) == _pairs(ref)
            assert _pairs(split.search_exact(q, limit, None, fingerprint)) == _pairs(ref)
            assert [h.payload for h in split.search(q, limit, None, fingerprint)] == [h.payload for h in ref]
            assert all(fingerprint in (None, h.payload["fingerprint"]) for h in ref)
        t = whole.search_exact(q, 60, None, fingerprint)[20].score  # a threshold equal to a returned score
        ref = whole.search_exact(q, 60, t, fingerprint)
        assert len(ref) == 20
        assert _pairs(split.search(q, 60, t, fingerprint)) == _pairs(ref)
        assert _pairs(split.search_exact(q, 60, t, fingerprint)) == _pairs(ref)


def test_writes_after_the_split_land_in_their_part(tmp_path: Path) -> None:
    split, whole = _store(tmp_path / "split"), _store(tmp_path / "whole", split=False)
    for s in (split, whole):
        s.upsert(_points(N, 1))
    split.prepare_search()
    assert split._parts is not None
    new = _points(400, 2, start=N)
    before0, before1 = split._count_here(tagged=False), split._parts.here().count(tagged=False)
    for s in (split, whole):
        s.upsert(new)
    ones = sum(edge_parts.part_of(p.point_id) for p in new)
    assert 0 < ones < 400
    assert split._count_here(tagged=False) == before0 + 400 - ones
    assert split._parts.here().count(tagged=False) == before1 + ones
    for p in new[:20]:  # each new point is its own nearest neighbour, whichever part holds it
        assert split.search(p.vector, 1, None, None)[0].point_id == p.point_id
    for s in (split, whole):
        s.delete_tagged("fp-b")
    assert split.count("fp-b") == 0 and split.count() == whole.count() == sum(f != "fp-b" for f in
                                                                              [FPS[i % 3] for i in range(N + 400)])
    for q in _queries():
        assert _pairs(split.search(q, 10, None, None)) == _pairs(whole.search_exact(q, 10, None, None))
    split.close()
    whole.close()


def test_a_reopened_split_store_answers_the_same(tmp_path: Path) -> None:
    store = _store(tmp_path / "s")
    store.upsert(_points(N, 1))
    before = [_pairs(store.search(q, 10, None, "fp-a")) for q in _queries()]
    pid = store._parts.worker_pid if store._parts else None
    store.close()
    assert pid is not None and not Path(f"/proc/{pid}").exists()  # the worker is gone with the store
    again = _store(tmp_path / "s")
    assert again._parts is not None and again.count() == N
    assert [_pairs(again.search(q, 10, None, "fp-a")) for q in _queries()] == before
    again.close()


@pytest.mark.parametrize("crash_after", ["copying", "copied"])
def test_an_interrupted_split_loses_no_point(tmp_path: Path, crash_after: str) -> None:
    whole = _store(tmp_path / "whole", split=False)
    store = _store(tmp_path / "s")
    pts = _points(N, 1)
    whole.upsert(pts)
    store.upsert(pts)
    assert edge_parts.split(store, open_part_1, crash_after=crash_after) is None
    part1 = edge_parts.part_dir(store.root, DIM)
    half = EdgeStore(str(store.root), DIM, part=1)
    copied = half.count(tagged=False)
    half.close()
    ones = sum(edge_parts.part_of(p.point_id) for p in pts)
    # "copying": one batch copied; "copied": all of part 1 copied and none yet deleted from part 0
    assert copied == (edge_parts.BATCH if crash_after == "copying" else ones) and store.count() == N
    store.close()  # the "crash": the split stopped half way
    state = edge_parts.read_state(store.root, DIM)
    assert state == (None if crash_after == "copying" else "copied")
    again = _store(tmp_path / "s")
    if crash_after == "copying":  # the partial copy is dropped; part 0 still held everything
        assert again._parts is None and not part1.exists() and again._count_here(tagged=False) == N
    else:  # the deletion from part 0 was finished on open
        assert again._parts is not None and edge_parts.read_state(store.root, DIM) == "split"
        assert again._count_here(tagged=False) + again._parts.here().count(tagged=False) == N
        assert all(edge_parts.part_of(i) == 0 for i in [i for i, _, _ in again.scroll()][: again._count_here()])
    assert sorted(_ids(again)) == sorted(_ids(whole))
    for q in _queries():
        assert _pairs(again.search(q, 10, None, "fp-b")) == _pairs(whole.search_exact(q, 10, None, "fp-b"))
    assert again._parts is not None  # split (again) by the first search
    again.close()
    whole.close()


def test_a_dead_worker_is_reported_and_replaced(tmp_path: Path) -> None:
    store = _store(tmp_path / "s")
    store.upsert(_points(N, 1))
    q = _queries(1)[0]
    first = _pairs(store.search(q, 10, None, None))
    assert store._parts is not None and store._parts.worker_pid is not None
    os.kill(store._parts.worker_pid, signal.SIGKILL)
    with pytest.raises(NomadError, match="search worker .* died"):
        store.search(q, 10, None, None)
    assert _pairs(store.search(q, 10, None, None)) == first  # a new worker took part 1 over
    store.close()
