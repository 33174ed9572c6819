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
from nomad_eval.index import point_id

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
    return [StoredPoint(point_id(TAG, f"syn-{start + i}#0"), vecs[i],
                        {"collection": TAG, "fingerprint": "synthetic", "doc_id": f"syn-{(start + i) // 4}",
                         "chunk_id": f"syn-{start + i}#0"}) for i in range(n)]


def measure(n: int, dim: int = 384, queries: int = 200, batch: int = 20_000, hnsw: bool = False
            ) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="store-scale-") as d:
        store = EdgeStore(d, dim=dim)
        rss0 = rss_mb()
        t = time.perf_counter()
        for start in range(0, n, batch):
            store.upsert(synthetic_points(min(batch, n - start), dim, start, seed=start))
        ingest_s = time.perf_counter() - t
        optimize_s = None
        if hnsw:  # build the HNSW index (blocking): approximate search instead of an exact scan
            t = time.perf_counter()
            store._shard.optimize()
            optimize_s = round(time.perf_counter() - t, 1)
        rng = np.random.default_rng(12345)
        lat = []
        for _ in range(queries):
            q = rng.standard_normal(dim).astype(np.float32)
            t = time.perf_counter()
            hits = store.search(q, 10, None, None)  # the eval-tag filter, as the retrieval tier searches
            lat.append((time.perf_counter() - t) * 1000)
            assert len(hits) == 10
        lat.sort()
        out = {"points": n, "search": "hnsw" if hnsw else "exact", "optimize_s": optimize_s,
               "ingest_s": round(ingest_s, 1), "ingest_points_per_s": round(n / ingest_s),
               "query_p50_ms": round(statistics.median(lat), 2), "query_p95_ms": round(lat[int(0.95 * len(lat))], 2),
               "rss_mb": round(rss_mb(), 0), "rss_growth_mb": round(rss_mb() - rss0, 0)}
        store.close()
        return out


if __name__ == "__main__":
    hnsw = "--hnsw" in sys.argv
    sizes = [int(a) for a in sys.argv[1:] if a != "--hnsw"] or [100_000]
    print(json.dumps([measure(n, hnsw=hnsw) for n in sizes], indent=1))
