"""The embedded store at scale: is the store's fast search still the exact search, and how fast is it at 1M?

python bench/store_scale.py [--points 1000000] [--queries 200] [--candidates exact,fast,...] [--out FILE]

Vectors are realistic, not uniform: real MiniLM embeddings of the repo's corpus chunks and of SciFact's corpus
(from the embedding cache when present), replicated with small Gaussian noise around them up to N; the queries
are real question embeddings (the goldens' and SciFact's queries) with noise of their own. Each candidate is a
separate shard built from the same points; its filtered top-10 (the eval-tag AND fingerprint filter, as the
retrieval tier searches) is compared with plain exact search on a build of its own, and the fast candidate is
built twice to show that two builds answer identically (ids and scores).

The store's default search is one process scanning the engine's int8 copies of the vectors and rescoring 4x the
limit against the float32 ones (backends/edge.py). The plain exact search on the same build is the store's
`search_exact`; the separate "exact" build is a shard made without int8 copies and searched exactly, the
reference for exact equivalence. Each p50 comes with its distribution-free 95% interval.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nomad_eval.backends.base import StoredPoint
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.base.shipped import build as shipped

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact"
TAG = "__nomad_eval__"
FP = "bench-fingerprint"
SCIFACT_DOCS = 3000
NOISE = 0.02  # per coordinate: a copy keeps cosine ~0.93 with its source, like paraphrased chunks
Top = list[tuple[str, float]]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _texts() -> tuple[list[str], list[str]]:
    """(passages, questions): the repo's corpus paragraphs and goldens, plus SciFact's corpus and queries."""
    passages = [p.strip() for f in sorted((ROOT / "corpus").glob("*.md"))
                for p in f.read_text().split("\n\n") if len(p.strip()) > 40]
    questions = [json.loads(line)["query"] for f in sorted((ROOT / "goldens").glob("*.jsonl"))
                 for line in f.read_text().splitlines() if line.strip()]
    if (SCIFACT / "corpus.jsonl").exists():  # the first SCIFACT_DOCS documents: a fresh checkout embeds them once
        for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()[:SCIFACT_DOCS]:
            d = json.loads(line)
            passages.append(f"{d['title']}\n{d['text']}")
        questions += [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    return list(dict.fromkeys(passages)), list(dict.fromkeys(questions))


def realistic_vectors(n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Real MiniLM vectors (through the harness's embedding cache, so a second run embeds nothing)."""
    from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache

    passages, questions = _texts()
    cache = EmbeddingCache(ROOT / ".nomad_eval" / "embeddings.sqlite")
    emb = CachedEmbedder(shipped("embedder", "minilm", threads=None), cache)  # torch's own thread count
    base = np.asarray(emb.embed_documents(passages), dtype=np.float32)
    rng = np.random.default_rng(7)
    picked = [questions[i] for i in sorted(rng.choice(len(questions), min(n_queries, len(questions)), replace=False))]
    qs = np.asarray(emb.embed_queries(picked), dtype=np.float32)
    cache.close()
    return base, qs


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def replicated(base: np.ndarray, start: int, count: int) -> np.ndarray:
    """Points start..start+count: point i is base[i % len(base)] plus noise seeded by its batch (repeatable)."""
    rng = np.random.default_rng(1_000_003 + start)
    src = base[np.arange(start, start + count) % len(base)]
    return _unit(src + rng.normal(0.0, NOISE, src.shape).astype(np.float32))


def noisy_queries(qs: np.ndarray) -> np.ndarray:
    return _unit(qs + np.random.default_rng(11).normal(0.0, NOISE, qs.shape).astype(np.float32))


def _batches(base: np.ndarray, n: int, batch: int = 20_000) -> Iterator[list[StoredPoint]]:
    for start in range(0, n, batch):
        vecs = replicated(base, start, min(batch, n - start))
        yield [StoredPoint(f"00000000-0000-4000-8000-{start + i:012d}", vecs[i],
                           {"collection": TAG, "fingerprint": FP, "chunk_id": f"c{start + i}"})
               for i in range(len(vecs))]


def build(d: str, base: np.ndarray, n: int, fast: bool) -> tuple[EdgeStore, float, float | None]:
    store: EdgeStore = shipped("store", "edge", path=d, dim=base.shape[1], fast_search=fast)
    t = time.perf_counter()
    for pts in _batches(base, n):
        store.upsert(pts)
    ingest_s = time.perf_counter() - t
    t = time.perf_counter()
    # The int8 copies, as the store's first search would build them; a no-op below its size floor or when exact.
    built = store.prepare_search()
    return store, ingest_s, (round(time.perf_counter() - t, 1) if built else None)


def run_queries(store: EdgeStore, qs: np.ndarray, exact: bool = False) -> tuple[list[Top], list[float], float]:
    """Top-10 (id, score) per query, wall ms per query, and this process's CPU ms per query (all threads)."""
    out, lat = [], []
    c0 = time.process_time()
    for q in qs:
        t = time.perf_counter()
        hits = store.search_exact(q, 10, None, FP) if exact else store.search(q, 10, None, FP)
        lat.append((time.perf_counter() - t) * 1000)
        out.append([(h.point_id, h.score) for h in hits])
    return out, lat, (time.process_time() - c0) * 1000 / len(qs)


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def p50_ci(lat: list[float]) -> list[float]:
    """Distribution-free 95% interval for the median: the order statistics a Binomial(n, 1/2) rank brackets."""
    from scipy.stats import binom

    s = sorted(lat)
    lo, hi = s[max(0, int(binom.ppf(0.025, len(s), 0.5)) - 1)], s[min(len(s) - 1, int(binom.isf(0.025, len(s), 0.5)))]
    return [round(lo, 2), round(hi, 2)]


def _latency(lat: list[float], cpu: float) -> dict[str, Any]:
    s = sorted(lat)
    return {"n_queries": len(s), "p50_ms": round(statistics.median(s), 2), "p50_ci95_ms": p50_ci(s),
            "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))], 2), "cpu_ms_per_query": round(cpu, 2),
            "load_avg_1min": _load()}


def agreement(a: list[Top], b: list[Top]) -> dict[str, Any]:
    overlap = [len({i for i, _ in x} & {i for i, _ in y}) / 10 for x, y in zip(a, b, strict=True)]
    same = sum(x == y for x, y in zip(a, b, strict=True))
    return {"top10_agreement": round(statistics.fmean(overlap), 4), "min_query_agreement": min(overlap),
            "identical_ids_and_scores": same, "n_queries": len(a)}


def measure_realistic(n: int = 1_000_000, n_queries: int = 200, builds: int = 2) -> dict[str, Any]:
    """The exact reference build, then `builds` builds searched the store's default way and exactly."""
    base, qs = realistic_vectors(n_queries)
    qs = noisy_queries(qs)
    out: dict[str, Any] = {"points": n, "base_vectors": len(base), "queries": len(qs), "noise_sd": NOISE,
                           "cores": len(os.sched_getaffinity(0))}
    reference: list[Top] | None = None
    runs: list[list[Top]] = []
    for label, fast in [("exact", False)] + [(f"fast_build{i + 1}", True) for i in range(builds)]:
        gc.collect()
        rss0 = rss_mb()
        with tempfile.TemporaryDirectory(prefix="store-scale-") as d:
            store, ingest_s, opt_s = build(d, base, n, fast)
            res: dict[str, Any] = {"ingest_s": round(ingest_s, 1), "index_build_s": opt_s}
            if fast:  # the same shard searched both ways: the fast path against plain exact search
                exact_here, lat_e, cpu_e = run_queries(store, qs, exact=True)
                res["plain_exact_on_this_build"] = _latency(lat_e, cpu_e)
            top, lat, cpu = run_queries(store, qs)
            res.update(_latency(lat, cpu))
            res["rss_growth_mb"] = round(rss_mb() - rss0)
            if reference is None:
                reference = top
            else:
                res["vs_plain_exact_same_build"] = agreement(top, exact_here)
                res["vs_plain_exact_separate_build"] = agreement(top, reference)
                runs.append(top)
            store.close()
            del store
        out[label] = res
        print(label, json.dumps(res), flush=True)
    if len(runs) == 2:
        out["two_fast_builds_identical"] = runs[0] == runs[1]
    return out


# The uniform synthetic measurements bench/run.py has always taken (store_100k, store_200k_hnsw, store_1m): random
# points on the sphere, a graph index's worst case. The HNSW ones build the engine's default graph on a shard made
# without the store's int8 search (fast_search=False), since that shard has no graph by design.


def synthetic_points(n: int, dim: int, start: int, seed: int) -> list[StoredPoint]:
    from nomad_eval.harness.index import point_id

    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [StoredPoint(point_id(TAG, f"syn-{start + i}#0", "synthetic"), vecs[i],
                        {"collection": TAG, "fingerprint": "synthetic", "doc_id": f"syn-{(start + i) // 4}",
                         "chunk_id": f"syn-{start + i}#0"}) for i in range(n)]


def _uniform_queries(dim: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(12345)
    return [rng.standard_normal(dim).astype(np.float32) for _ in range(n)]


def _graph_search(store: EdgeStore, q: np.ndarray, limit: int) -> list[str]:
    """A tag-filtered search that lets the engine use its HNSW graph: the store's own search is exact on a shard
    made without the fast search (EdgeStore.search_exact), so it would never touch the graph being measured."""
    qe = store._qe
    req = qe.QueryRequest(query=qe.Query.Nearest(q.astype(np.float32)), limit=limit, filter=store._filter(None),
                          with_payload=False, with_vector=False)
    return [str(p.id) for p in store._shard.query(req)]


def _top10(store: EdgeStore, qs: list[np.ndarray], graph: bool = False) -> list[list[str]]:
    if graph:
        return [_graph_search(store, q, 10) for q in qs]
    return [[h.point_id for h in store.search(q, 10, None, None)] for q in qs]


def _filled(d: str, n: int, dim: int, batch: int, hnsw: bool) -> tuple[EdgeStore, float]:
    store: EdgeStore = shipped("store", "edge", path=d, dim=dim, fast_search=not hnsw)
    t = time.perf_counter()
    for start in range(0, n, batch):
        store.upsert(synthetic_points(min(batch, n - start), dim, start, seed=start))
    return store, time.perf_counter() - t


def measure(n: int, dim: int = 384, queries: int = 200, batch: int = 20_000, hnsw: bool = False
            ) -> dict[str, float | str | None]:
    """Ingest rate, filtered top-10 latency and memory; with hnsw, also the index's agreement with exact."""
    with tempfile.TemporaryDirectory(prefix="store-scale-") as d:
        rss0 = rss_mb()
        store, ingest_s = _filled(d, n, dim, batch, hnsw)
        qs = _uniform_queries(dim, queries)
        optimize_s = agreement = None
        t = time.perf_counter()
        if hnsw:  # build the HNSW index (blocking): approximate search instead of an exact scan
            exact = _top10(store, qs)
            t = time.perf_counter()
            store._shard.optimize()
            optimize_s = round(time.perf_counter() - t, 1)
            approx = _top10(store, qs, graph=True)
            agreement = round(statistics.fmean(len(set(a) & set(e)) / 10 for a, e in zip(approx, exact, strict=True)),
                              3)
        elif store.prepare_search():  # the store's own int8 copies, as its first search would build them
            optimize_s = round(time.perf_counter() - t, 1)
        lat = []
        for q in qs:
            t = time.perf_counter()
            # The eval-tag filter, as the retrieval tier searches; through the graph when one is measured.
            hits = _graph_search(store, q, 10) if hnsw else store.search(q, 10, None, None)
            lat.append((time.perf_counter() - t) * 1000)
            assert len(hits) == 10
        lat.sort()
        out: dict[str, float | str | None] = {
            "points": n, "search": "hnsw" if hnsw else ("int8 scan + exact rescoring" if optimize_s else "exact"),
            "optimize_s": optimize_s,
            "ingest_s": round(ingest_s, 1), "ingest_points_per_s": round(n / ingest_s),
            "query_p50_ms": round(statistics.median(lat), 2), "query_p50_ci95_ms": p50_ci(lat),
            "query_p95_ms": round(lat[int(0.95 * len(lat))], 2),
            "rss_mb": round(rss_mb(), 0), "rss_growth_mb": round(rss_mb() - rss0, 0)}
        if hnsw:
            out["top10_agreement_with_exact"] = agreement
            out["vectors"] = "uniform random on the sphere: the worst case for a graph index; real embeddings cluster"
        store.close()
        return out


def hnsw_repeatability(n: int = 50_000, dim: int = 384, queries: int = 100) -> dict[str, float | int]:
    """Build the HNSW index twice on the same points: do the two give the same top 10?"""
    qs = _uniform_queries(dim, queries)
    runs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="store-hnsw-") as d:
            store, _ = _filled(d, n, dim, 20_000, hnsw=True)
            store._shard.optimize()
            runs.append(_top10(store, qs, graph=True))
            store.close()
    same = sum(a == b for a, b in zip(runs[0], runs[1], strict=True))
    return {"points": n, "queries": queries, "identical_top10_across_two_builds": same}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "store_scale.json"))
    ap.add_argument("--embed-only", action="store_true")
    args = ap.parse_args()
    if args.embed_only:
        b, q = realistic_vectors(args.queries)
        print(b.shape, q.shape)
    else:
        result = measure_realistic(args.points, args.queries)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
