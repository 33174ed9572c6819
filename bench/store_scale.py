"""The embedded store at scale, with precomputed synthetic vectors so the store is measured, not the embedder.

python bench/store_scale.py 100000 [1000000]  -> ingest rate, filtered top-10 query p50/p95, resident memory.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nomad_eval.backends.base import StoredPoint
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.harness.index import point_id

TAG = "__nomad_eval__"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def synthetic_points(n: int, dim: int, start: int, seed: int) -> list[StoredPoint]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [StoredPoint(point_id(TAG, f"syn-{start + i}#0", "synthetic"), vecs[i],
                        {"collection": TAG, "fingerprint": "synthetic", "doc_id": f"syn-{(start + i) // 4}",
                         "chunk_id": f"syn-{start + i}#0"}) for i in range(n)]


def _queries(dim: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(12345)
    return [rng.standard_normal(dim).astype(np.float32) for _ in range(n)]


def _top10(store: EdgeStore, qs: list[np.ndarray]) -> list[list[str]]:
    return [[h.point_id for h in store.search(q, 10, None, None)] for q in qs]


def _filled(d: str, n: int, dim: int, batch: int) -> tuple[EdgeStore, float]:
    store = EdgeStore(d, dim=dim)
    t = time.perf_counter()
    for start in range(0, n, batch):
        store.upsert(synthetic_points(min(batch, n - start), dim, start, seed=start))
    return store, time.perf_counter() - t


def measure(n: int, dim: int = 384, queries: int = 200, batch: int = 20_000, hnsw: bool = False
            ) -> dict[str, float | str | None]:
    """Ingest rate, filtered top-10 latency and memory; with hnsw, also the index's agreement with exact."""
    with tempfile.TemporaryDirectory(prefix="store-scale-") as d:
        rss0 = rss_mb()
        store, ingest_s = _filled(d, n, dim, batch)
        qs = _queries(dim, queries)
        optimize_s = agreement = None
        if hnsw:  # build the HNSW index (blocking): approximate search instead of an exact scan
            exact = _top10(store, qs)
            t = time.perf_counter()
            store._shard.optimize()
            optimize_s = round(time.perf_counter() - t, 1)
            approx = _top10(store, qs)
            agreement = round(statistics.fmean(len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)),
                              3)
        lat = []
        for q in qs:
            t = time.perf_counter()
            hits = store.search(q, 10, None, None)  # the eval-tag filter, as the retrieval tier searches
            lat.append((time.perf_counter() - t) * 1000)
            assert len(hits) == 10
        lat.sort()
        out: dict[str, float | str | None] = {
            "points": n, "search": "hnsw" if hnsw else "exact", "optimize_s": optimize_s,
            "ingest_s": round(ingest_s, 1), "ingest_points_per_s": round(n / ingest_s),
            "query_p50_ms": round(statistics.median(lat), 2), "query_p95_ms": round(lat[int(0.95 * len(lat))], 2),
            "rss_mb": round(rss_mb(), 0), "rss_growth_mb": round(rss_mb() - rss0, 0)}
        if hnsw:
            out["top10_agreement_with_exact"] = agreement
            out["vectors"] = "uniform random on the sphere: the worst case for a graph index; real embeddings cluster"
        store.close()
        return out


def hnsw_repeatability(n: int = 50_000, dim: int = 384, queries: int = 100) -> dict[str, float | int]:
    """Build the HNSW index twice on the same points: do the two give the same top 10?"""
    qs = _queries(dim, queries)
    runs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="store-hnsw-") as d:
            store, _ = _filled(d, n, dim, 20_000)
            store._shard.optimize()
            runs.append(_top10(store, qs))
            store.close()
    same = sum(a == b for a, b in zip(runs[0], runs[1], strict=True))
    return {"points": n, "queries": queries, "identical_top10_across_two_builds": same}


if __name__ == "__main__":
    hnsw = "--hnsw" in sys.argv
    sizes = [int(a) for a in sys.argv[1:] if a != "--hnsw"] or [100_000]
    print(json.dumps([measure(n, hnsw=hnsw) for n in sizes], indent=1))
    if hnsw:
        print(json.dumps(hnsw_repeatability()))
