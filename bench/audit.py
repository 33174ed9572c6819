"""The served-collection audit at 10k points: is `tier=corpus action=audit` done inside a minute?

python bench/audit.py [--points 10000] [--sample 200] [--repeats 3] [--out FILE]

A corpus of `points / 10` documents is written, each ten real passages (the chunks of this repo's corpus, shuffled
per document with a seeded generator), and a Qdrant collection in qdrant-client's local mode (a folder: the
calls a server takes) holds one point per passage with its real MiniLM vector. Each audit is the CLI run from
outside, as a user runs it: cold, with a fresh data folder, so the drift sample is re-embedded by the model (its
load included); warm, with a data folder whose embedding cache already holds the embedder's vectors of the sampled
texts. Each on a clean collection (exit 0), then the same with planted findings (three ghost points, one document's
points deleted, one duplicated, one re-embedded with another model: exit 1). The machine is shared, so each audit's
CPU seconds (the process and its threads) are recorded beside its wall time: on a busy machine the wall time says
more about the neighbours than about the audit. Writes bench/results/audit.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
PER_DOC = 10


def _passages() -> tuple[list[str], np.ndarray]:
    """This repo's corpus chunks and their MiniLM vectors (through the repo's embedding cache)."""
    from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache
    from nomad_eval.base.shipped import build
    from nomad_eval.data.corpus import load_markdown_dirs
    from nomad_eval.rag.chunking import ChunkerParams, chunk_corpus

    texts = list(dict.fromkeys(c.text for c in chunk_corpus(load_markdown_dirs([ROOT / "corpus"]),
                                                            ChunkerParams(800, 100, False))))
    cache = EmbeddingCache(ROOT / ".nomad_eval" / "embeddings.sqlite")
    vecs = np.asarray(CachedEmbedder(build("embedder", "minilm", threads=None), cache).embed_documents(texts))
    cache.close()
    return texts, vecs


def _corpus(folder: Path, texts: list[str], docs: int) -> list[list[int]]:
    """`docs` documents of PER_DOC passages each; returns each document's passage indexes."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    picks = []
    for d in range(docs):
        idx = [int(i) for i in rng.choice(len(texts), PER_DOC, replace=False)]
        (folder / f"doc-{d:05d}.md").write_text("\n\n".join(texts[i] for i in idx) + "\n", encoding="utf-8")
        picks.append(idx)
    return picks


def _collection(path: Path, texts: list[str], vecs: np.ndarray, picks: list[list[int]], dirty: bool) -> int:
    from qdrant_client import QdrantClient, models

    points = [({"doc_id": f"doc-{d:05d}", "text": texts[i]}, vecs[i]) for d, idx in enumerate(picks) for i in idx]
    if dirty:
        rng = np.random.default_rng(1)
        other = rng.standard_normal((PER_DOC, vecs.shape[1]))
        points = [p for p in points if p[0]["doc_id"] != "doc-00001"]  # missing
        points += [p for p in points if p[0]["doc_id"] == "doc-00002"]  # duplicated
        points = [(p, other[k % PER_DOC] if p["doc_id"] == "doc-00003" else v)  # re-embedded by another model
                  for k, (p, v) in enumerate(points)]
        points += [({"doc_id": "doc-00004", "text": f"An old version, paragraph {k}."}, vecs[k]) for k in range(3)]
    client = QdrantClient(path=str(path))
    client.create_collection("bench", vectors_config=models.VectorParams(size=vecs.shape[1],
                                                                        distance=models.Distance.COSINE))
    structs = [models.PointStruct(id=str(uuid.UUID(int=k + 1)), vector=[float(x) for x in v], payload=p)
               for k, (p, v) in enumerate(points)]
    for i in range(0, len(structs), 5000):
        client.upsert("bench", structs[i : i + 5000], wait=True)
    client.close()
    return len(structs)


def _audit(corpus: Path, store: Path, sample: int, data: Path) -> tuple[float, float, int, str]:
    """One audit from outside: wall seconds, CPU seconds of the process (all threads), exit code, output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "nomad_eval", "tier=corpus", "action=audit", "store=server",
                        f"store.url={store}", "store.collection=bench", f"data.corpus_dir={corpus}",
                        f"paths.data_dir={data}", f"audit.sample={sample}", "quiet=true"],
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, r.returncode, r.stdout


def _runs(corpus: Path, store: Path, sample: int, repeats: int) -> dict[str, Any]:
    """`repeats` cold audits (a fresh data folder each: the model loads and embeds the sample), then as many warm
    ones sharing one data folder (the embedding cache holds the embedder's vectors of the sampled texts)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-audit-warm-") as warm:
        _audit(corpus, store, sample, Path(warm))  # untimed: fills the warm folder's embedding cache
        for label in ("cold", "warm"):
            runs = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory(prefix="bench-audit-data-") as fresh:
                    runs.append(_audit(corpus, store, sample, Path(fresh if label == "cold" else warm)))
            out[label] = {"wall_s": [round(r[0], 2) for r in runs],
                          "median_wall_s": round(statistics.median(r[0] for r in runs), 2),
                          "cpu_s": [round(r[1], 2) for r in runs],
                          "median_cpu_s": round(statistics.median(r[1] for r in runs), 2),
                          "exit_codes": [r[2] for r in runs]}
            output = runs[-1][3].splitlines()
            print(label, json.dumps(out[label]), flush=True)
    out["output"] = output
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "audit.json"))
    a = ap.parse_args()
    texts, vecs = _passages()
    out: dict[str, Any] = {"points": a.points, "documents": a.points // PER_DOC, "sample": a.sample,
                           "distinct_passages": len(texts), "cores": len(os.sched_getaffinity(0)),
                           "target_s": 60}
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        picks = _corpus(Path(tmp) / "corpus", texts, a.points // PER_DOC)
        for label, dirty in (("clean", False), ("planted", True)):
            store = Path(tmp) / label
            t = time.perf_counter()
            n = _collection(store, texts, vecs, picks, dirty)
            written = time.perf_counter() - t
            load = float(Path("/proc/loadavg").read_text().split()[0])
            out[label] = {"points": n, "write_s": round(written, 1), "load_avg_1min_before": load,
                          **_runs(Path(tmp) / "corpus", store, a.sample, a.repeats)}
    out["load_avg_1min_after"] = float(Path("/proc/loadavg").read_text().split()[0])
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
