"""What comparing the stored vectors with the embedding cache costs when the store is readied (harness/index.py
VECTOR_CHECK_ALL, VECTOR_CHECK_SAMPLE): the time of `check_vectors` at several store sizes, 384-d vectors.

python bench/vector_check.py [--sizes 1000,5000,20000,100000] [--repeats 5] [--out FILE]

Each size is a fresh embedded store and embedding cache holding the same random unit vectors (the check reads the
cache through its checksums and the store through the engine's retrieve, as a run does). Each time is the median
of the repeats with its range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache
from nomad_eval.backends.edge import EdgeStore
from nomad_eval.harness.index import VECTOR_CHECK_ALL, VECTOR_CHECK_SAMPLE, check_vectors, ingest

RESULTS = Path(__file__).parent / "results" / "vector_check.json"


class _Embedder:
    """Random unit vectors keyed by text: stands in for a model, which the check never calls."""

    name, dim, document_prefix, query_prefix, max_input_tokens = "bench", 384, "", "", 512

    def identity(self) -> dict[str, object]:
        return {"name": "bench", "dim": 384}

    def embed(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(abs(hash(tuple(texts))) % 2**32)
        v = rng.standard_normal((len(texts), 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class _Chunk:
    def __init__(self, i: int) -> None:
        self.chunk_id, self.doc_id, self.path, self.index, self.heading = f"c{i}", f"d{i // 10}", "x.md", i, ""
        self.text = f"chunk text {i}"


class _Runtime:
    def __init__(self, n: int, folder: Path) -> None:
        self.chunks = [_Chunk(i) for i in range(n)]
        self.fingerprint = "0123456789abcdef"
        self.cached_embedder = CachedEmbedder(_Embedder(), EmbeddingCache(folder / "embeddings.sqlite"))  # type: ignore[arg-type]


def measure(n: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        rt = _Runtime(n, Path(tmp))
        store = EdgeStore(str(Path(tmp) / "store"), 384, "collection", "__nomad_eval__", fast_search=False)
        vecs = list(rt.cached_embedder.embed_documents([c.text for c in rt.chunks]))
        ingest(rt, store, True, vecs)  # type: ignore[arg-type]
        times = []
        for _ in range(repeats):
            rt.cached_embedder._memo.clear()  # each pass reads the cache file, as a fresh run does
            t = time.perf_counter()
            check = check_vectors(rt, store)  # type: ignore[arg-type]
            times.append(time.perf_counter() - t)
        store.close()
    assert check is not None and check.problem is None
    return {"points": n, "compared": check.checked, "seconds_median": round(statistics.median(times), 3),
            "seconds_range": [round(min(times), 3), round(max(times), 3)], "repeats": repeats}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,5000,20000,100000")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    rows = [measure(int(n), args.repeats) for n in args.sizes.split(",")]
    for r in rows:
        print(r)
    args.out.write_text(json.dumps({"all_up_to": VECTOR_CHECK_ALL, "sample": VECTOR_CHECK_SAMPLE, "rows": rows},
                                   indent=1) + "\n")


if __name__ == "__main__":
    main()
