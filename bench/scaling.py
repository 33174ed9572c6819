"""Cost against size: wall time and peak memory of a retrieval run for several corpus and suite sizes.

    python bench/scaling.py [--corpus 1000,10000,100000,1000000] [--suite 100,1000,10000] [--keep DIR]

For each corpus size (in chunks, as the default pipeline's chunker cuts them) it writes a synthetic markdown corpus
and nested suites (the first 100 questions of the 1k suite are the 100 suite, and so on) to a temporary folder,
then runs `python -m nomad_eval tier=retrieval` as separate processes:

- cold: an empty data dir, the smallest suite. The run chunks, embeds and writes the store (and, at 100k chunks and
  more, builds the store's int8 search copies on its first search).
- warm, one per suite size: store and embedding cache filled. The suites' query embeddings are put in the cache
  by this script beforehand, the way an earlier run of the same suite leaves them, so a warm run embeds nothing.

Each run is timed from spawn to exit (wall) and its peak resident memory is the child's maximum RSS as GNU time
reports it. report.json gives the run's own timings and counts; trace.jsonl gives each question's store search.

Every retrieval run also scores every answerable question against every chunk (run/retrieval_cases.py score_lists ->
harness/cosines.py corpus_cosines, for the separation table). Those cosines are counted (to 5 decimals) tile by
tile, so memory does not grow with questions x chunks (kept value by value, about 100 bytes a pair: 10k x 10k
peaked at 9.7 GB), but time still does. A cell with more than `--max-pairs` pairs (questions x chunks)
is not run but recorded as skipped with its pair count, to bound a grid's time.

Embedding a million chunks with MiniLM takes hours here, so every run embeds with `HashEmbedder` below, a fast
deterministic stand-in selected by Hydra overrides. It records its own time, which is taken out of the harness's
share. What MiniLM would cost instead is predicted from its rate measured once per invocation on 300 of the same
synthetic chunks (after a warm-up call): texts the stand-in embedded / MiniLM's texts per second, plus texts it
counted tokens for / MiniLM's tokenizer rate. The prediction is labelled as such wherever it is shown.

Definitions (also written into the results file):
- search: the store's vector search, summed over questions (each retrieval span's search duration). In a cold
  run of 100k chunks or more the first search also builds the store's int8 copies (first_search_s shows it).
- harness share: wall - stand-in embedding (embed and token counting) - search. It is everything else: process
  start-up and imports, config, reading the corpus and suite, chunking, the cache, store open and writes, query
  expansion and reranking, metrics with their intervals, and writing the reports.

Results go to bench/results/scaling.json. A run replaces the rows (corpus sizes) it measured and keeps the other
rows already in the file, so the 1M row can be measured alone; the MiniLM rate is that of the latest run
(`--minilm-texts 0` keeps the one on file). `python bench/readme_tables.py` turns the file into README's table.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "results" / "scaling.json"
EMBED_LOG_ENV = "NOMAD_BENCH_EMBED_LOG"
TIME = "/usr/bin/time"  # GNU time, for the child's peak RSS
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
DEFINITIONS = {
    "wall_s": "the child process from spawn to exit, as the user waits for it",
    "peak_rss_mb": "maximum resident set size of the child process (GNU time %M), in MiB",
    "search_s": "the store's vector search summed over questions (trace.jsonl nomad_eval.duration.search_s); in a "
                "cold run of 100k chunks or more the first search also builds the int8 copies (first_search_s)",
    "stand_in_embed_s": "time inside the benchmark's HashEmbedder (embed and token_counts), not a real model's",
    "harness_s": "wall_s - stand_in_embed_s - search_s: start-up, config, reading and chunking, cache, store open and "
                 "writes, reranking, metrics and intervals, reports",
    "minilm_predicted_s": "texts the stand-in embedded / MiniLM texts per second + texts it counted tokens for / "
                          "MiniLM tokenizer texts per second (the rates under `minilm`; README's table recomputes it "
                          "from the file's current rates)",
}

_WORD = re.compile(r"[a-z0-9]+")
_PIECE = re.compile(r"\w+|[^\w\s]")
# Process-wide totals of every HashEmbedder, written once at exit to the file named by NOMAD_BENCH_EMBED_LOG.
_USAGE = {"embed_s": 0.0, "embed_texts": 0, "embed_calls": 0, "token_count_s": 0.0, "token_count_texts": 0}
_LOG_REGISTERED = False


def _write_usage() -> None:
    path = os.environ.get(EMBED_LOG_ENV)
    if path:
        Path(path).write_text(json.dumps(_USAGE))


class HashEmbedder:
    """Benchmark-only embedder: hashed word counts (log-scaled) through a fixed Gaussian projection, L2-normalised.

    Texts sharing words get high cosines, so a question drawn from a chunk finds it, at a few microseconds per
    text. Not a model anyone should evaluate with; it exists so the harness and store can be timed at 1M chunks.
    `batch_size` and `threads` are accepted because the MiniLM config group passes them."""

    def __init__(self, name: str = "bench-hash", dim: int = 384, max_input_tokens: int = 256,
                 document_prefix: str = "", query_prefix: str = "", batch_size: int = 32,
                 threads: int | None = None, buckets: int = 2**15, seed: int = 0) -> None:
        global _LOG_REGISTERED
        self.name = name
        self.dim = dim
        self.max_input_tokens = max_input_tokens
        self.document_prefix = document_prefix
        self.query_prefix = query_prefix
        self.buckets = buckets
        self.seed = seed
        self._bucket_of: dict[str, int] = {}
        if not _LOG_REGISTERED:
            atexit.register(_write_usage)
            _LOG_REGISTERED = True

    def identity(self) -> dict[str, Any]:
        return {"backend": "bench-hash", "model": self.name, "dim": self.dim, "buckets": self.buckets,
                "seed": self.seed, "max_input_tokens": self.max_input_tokens,
                "document_prefix": self.document_prefix, "query_prefix": self.query_prefix}

    @cached_property
    def _projection(self) -> np.ndarray:
        # Built on the first embed only: a warm run never pays for it.
        return np.random.default_rng(self.seed).standard_normal((self.buckets, self.dim), dtype=np.float32)

    def _bucket(self, word: str) -> int:
        b = self._bucket_of.get(word)
        if b is None:
            b = self._bucket_of[word] = zlib.crc32(word.encode()) % self.buckets
        return b

    def embed(self, texts: list[str]) -> np.ndarray:
        from scipy.sparse import csr_matrix

        t = time.perf_counter()
        indptr = [0]
        indices: list[int] = []
        for text in texts:
            indices.extend(self._bucket(w) for w in _WORD.findall(text.lower()))
            indptr.append(len(indices))
        counts = csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                            shape=(len(texts), self.buckets))
        counts.sum_duplicates()
        counts.data = np.log1p(counts.data)
        vecs = np.asarray(counts @ self._projection, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs /= np.where(norms > 0, norms, 1.0)
        _USAGE["embed_s"] += time.perf_counter() - t
        _USAGE["embed_texts"] += len(texts)
        _USAGE["embed_calls"] += 1
        return vecs

    def token_counts(self, texts: list[str]) -> list[int]:
        # Words and punctuation marks plus the two special tokens: close to a word-piece count for English prose.
        t = time.perf_counter()
        out = [len(_PIECE.findall(text)) + 2 for text in texts]
        _USAGE["token_count_s"] += time.perf_counter() - t
        _USAGE["token_count_texts"] += len(texts)
        return out


# --- synthetic corpus and suites -------------------------------------------------------------------------------

def word_stream() -> list[str]:
    """The project corpus's words in order: sampling positions uniformly draws words at their real frequencies."""
    words: list[str] = []
    for path in sorted((REPO / "corpus").glob("*.md")):
        words.extend(w for w in re.findall(r"[a-z]+", path.read_text().lower()) if len(w) > 1 or w == "a")
    return words


def doc_id(i: int) -> str:
    # A thousand documents per folder: the loader reads subfolders, and a million files in one folder is unkind.
    return f"part-{i // 1000:04d}/doc-{i:07d}"


def _code(i: int) -> str:
    letters = "ABCDEFGHJKLMNPRSTVWXZ"
    return f"{letters[i % 21]}{letters[(i // 21) % 21]}-{1000 + i}"


def document(i: int, words: list[str], sections: int = 6, sentences: int = 8) -> tuple[str, list[list[str]]]:
    """Document i's markdown and its sentences' words; the same i always gives the same text."""
    rng = np.random.default_rng([7, i])
    code = _code(i)
    pick = rng.integers(0, len(words), size=sections * (3 + sentences * 16) + 8)
    pos = 0

    def take(n: int) -> list[str]:
        nonlocal pos
        out = [words[k] for k in pick[pos:pos + n]]
        pos += n
        return out

    title = " ".join(take(3)).capitalize()
    parts = [f"# {title}: the {code}\n"]
    said: list[list[str]] = []
    for _ in range(sections):
        parts.append(f"\n## {' '.join(take(3)).capitalize()}\n")
        body = []
        for j in range(sentences):
            sent = take(int(rng.integers(9, 16)))
            if j == 0:
                sent = ["the", code, *sent]
            if rng.random() < 0.3:
                sent.insert(int(rng.integers(1, len(sent))), str(int(rng.integers(2, 500))))
            said.append(sent)
            line = " ".join(sent)
            body.append(line[0].upper() + line[1:] + ".")
        parts.append(" ".join(body) + "\n")
    return "".join(parts), said


def default_chunker() -> Any:
    """The chunker of the default pipeline (conf/pipeline/default.yaml)."""
    from nomad_eval.base.shipped import option
    from nomad_eval.rag.chunking import ChunkerParams

    p = option("pipeline", "default")
    return ChunkerParams(int(p["chunk_size"]), int(p["chunk_overlap"]), bool(p["whole_document"]))


def write_corpus(folder: Path, target_chunks: int, words: list[str]) -> dict[str, Any]:
    """Documents until the default chunker has cut at least `target_chunks` chunks; returns what was written."""
    from nomad_eval.data.corpus import Document
    from nomad_eval.rag.chunking import chunk_document

    params = default_chunker()
    t = time.perf_counter()
    chunks = docs = size = 0
    while chunks < target_chunks:
        text, _ = document(docs, words)
        path = folder / f"{doc_id(docs)}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        chunks += len(chunk_document(Document(doc_id(docs), str(path), text), params))
        size += len(text)
        docs += 1
    return {"documents": docs, "chunks_expected": chunks, "corpus_mb": round(size / 2**20, 1),
            "generate_s": round(time.perf_counter() - t, 1)}


def questions(n: int, n_docs: int, words: list[str], seed: int = 11) -> Iterator[dict[str, Any]]:
    """Goldens drawn from the corpus: a run of words from one of a document's sentences, most with its product
    code; one in 33 is an out-of-corpus question that expects a refusal."""
    rng = np.random.default_rng(seed)
    for q in range(n):
        gid = f"syn-{q:05d}"
        if q % 33 == 32:
            asked = [words[k] for k in rng.integers(0, len(words), size=8)]
            yield {"id": gid, "query": f"What does the {' '.join(asked)} manual say?", "turns": [],
                   "relevantDocIds": [], "mustInclude": [], "mustNotInclude": [], "expectRefusal": True,
                   "tags": ["synthetic", "refusal"]}
            continue
        i = int(rng.integers(0, n_docs))
        _, said = document(i, words)
        sent = said[int(rng.integers(0, len(said)))]
        width = int(rng.integers(5, 9))
        start = int(rng.integers(0, max(1, len(sent) - width)))
        asked = sent[start:start + width]
        code = _code(i)
        text = " ".join(asked) + (f" for the {code}?" if rng.random() < 0.7 and code not in asked else "?")
        yield {"id": gid, "query": text[0].upper() + text[1:], "turns": [], "relevantDocIds": [doc_id(i)],
               "mustInclude": [], "mustNotInclude": [], "expectRefusal": False, "tags": ["synthetic"]}


def write_suites(folder: Path, sizes: list[int], n_docs: int, words: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(g) for g in questions(max(sizes), n_docs, words)]
    for n in sizes:
        (folder / f"q{n}.jsonl").write_text("\n".join(lines[:n]) + "\n")


# --- runs ------------------------------------------------------------------------------------------------------

def overrides(root: Path, suite: int, run: str) -> list[str]:
    return ["quiet=true", "tier=retrieval", f"paths.data_dir={root / 'data'}", f"paths.run_dir={root / 'runs' / run}",
            f"data.corpus_dir={root / 'corpus'}", f"data.goldens_dir={root / 'goldens'}", f"suite=q{suite}",
            "embedder._target_=bench.scaling.HashEmbedder", "embedder.name=bench-hash"]


def run_cell(root: Path, suite: int, run: str, profile: bool) -> dict[str, Any]:
    """One retrieval run in its own process: wall, peak RSS, the report's timings and counts, the search spans."""
    out = root / "runs" / run
    log = root / f"{run}.embedder.json"
    rss = root / f"{run}.maxrss"
    log.unlink(missing_ok=True)
    # GNU time forks the run from its own small process and reports that child's peak RSS. Measured from here
    # (wait4, RUSAGE_CHILDREN) the figure would start at this process's own peak, which Linux carries across the
    # fork and exec of every child.
    cmd = [TIME, "-f", "%M", "-o", str(rss), sys.executable,
           *(["-m", "cProfile", "-o", str(root / f"{run}.prof")] if profile else []),
           "-m", "nomad_eval", *overrides(root, suite, run)]
    load = os.getloadavg()[0]
    with open(root / f"{run}.stdout", "w") as so, open(root / f"{run}.stderr", "w") as se:
        t = time.perf_counter()
        code = subprocess.run(cmd, cwd=REPO, env={**ENV, EMBED_LOG_ENV: str(log)}, stdout=so, stderr=se).returncode
        wall = time.perf_counter() - t
    if code != 0:
        raise RuntimeError(f"{run} exited {code}: {(root / f'{run}.stderr').read_text()[-2000:]}")
    report = json.loads((out / "report.json").read_text())
    spans = [json.loads(line)["attributes"] for line in (out / "trace.jsonl").read_text().splitlines() if line]
    usage_log = json.loads(log.read_text()) if log.exists() else dict.fromkeys(_USAGE, 0)
    search = sum(s.get("nomad_eval.duration.search_s", 0.0) for s in spans)
    stand_in = usage_log["embed_s"] + usage_log["token_count_s"]
    c = report["counts"]
    return {
        "suite": suite, "load_avg_1min_before": round(load, 2), "wall_s": round(wall, 2),
        "peak_rss_mb": round(int(rss.read_text().split()[-1]) / 1024),
        "timings": {k: round(v, 3) for k, v in report["timings"].items()},
        # Interpreter start, imports and Hydra before the run's clock starts; report.md, report.html (which reads
        # scores.json back), the console summary and exit after it stops.
        "outside_run_clock_s": round(wall - report["timings"]["total"], 2),
        "counts": {k: c[k] for k in ("chunks", "documents", "goldens", "refusal", "embedding_model_calls",
                                     "model_loaded")},
        "search_s": round(search, 3),
        # At 100k chunks and more, a cold run's first search builds the store's int8 copies.
        "first_search_s": round(spans[0].get("nomad_eval.duration.search_s", 0.0), 3) if spans else None,
        "rerank_s": round(sum(s.get("nomad_eval.duration.rerank_s", 0.0) for s in spans), 3),
        "stand_in_embedder": {k: round(v, 3) if isinstance(v, float) else v for k, v in usage_log.items()},
        "stand_in_embed_s": round(stand_in, 3),
        "harness_s": round(wall - stand_in - search, 2),
        "scores_json_mb": round((out / "scores.json").stat().st_size / 2**20, 1),
        "run_dir_mb": round(sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20, 1),
        "recall_at_5": report["metrics"].get("recall@5"),
    }


def prefill_queries(root: Path, suite: int) -> float:
    """Put the suite's query embeddings in the run's cache exactly as a run would (the pipeline's expansion, the
    embedder's prefix, the same cache key), so warm runs embed nothing."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from nomad_eval.backends.cache import CachedEmbedder, EmbeddingCache
    from nomad_eval.cli.resolvers import register_resolvers
    from nomad_eval.data.golden import load_goldens

    t = time.perf_counter()
    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[o for o in overrides(root, suite, "prefill") if o != "quiet=true"])
    pipeline = instantiate(cfg.pipeline)
    cache = EmbeddingCache(Path(cfg.paths.data_dir) / "embeddings.sqlite")
    goldens = load_goldens(Path(cfg.data.goldens_dir) / f"{cfg.suite}.jsonl")
    CachedEmbedder(instantiate(cfg.embedder), cache).embed_queries([pipeline.expand(g.final_query) for g in goldens])
    cache.close()
    return round(time.perf_counter() - t, 2)


def minilm_rates(words: list[str], n: int) -> dict[str, Any]:
    """MiniLM's embedding and tokenizer rates on `n` synthetic chunks (the model loaded by a warm-up call first)."""
    from nomad_eval.base.shipped import build
    from nomad_eval.data.corpus import Document
    from nomad_eval.rag.chunking import chunk_document

    texts: list[str] = []
    i, params = 0, default_chunker()
    while len(texts) < max(n, 3000):
        text, _ = document(i, words)
        texts += [c.text for c in chunk_document(Document(doc_id(i), "", text), params)]
        i += 1
    emb = build("embedder", "minilm", threads=None)  # torch's own thread count
    load = os.getloadavg()[0]
    emb.embed(["warm up"])
    t = time.perf_counter()
    emb.embed(texts[:n])
    embed_s = time.perf_counter() - t
    emb.token_counts(["warm up"])
    t = time.perf_counter()
    tokens = emb.token_counts(texts)
    tok_s = time.perf_counter() - t
    return {"model": emb.name, "texts": n, "embed_s": round(embed_s, 2),
            "embed_texts_per_s": round(n / embed_s, 1), "batch_size": emb.batch_size,
            "tokenize_texts": len(texts), "tokenize_texts_per_s": round(len(texts) / tok_s),
            "mean_tokens_per_chunk": round(sum(tokens) / len(tokens), 1),
            "share_over_256_tokens": round(sum(t > emb.max_input_tokens for t in tokens) / len(tokens), 3),
            "load_avg_1min_before": round(load, 2), "date": time.strftime("%Y-%m-%d")}


def predicted_minilm_s(cell: dict[str, Any], rates: dict[str, Any]) -> float:
    use = cell["stand_in_embedder"]
    seconds = (float(use["embed_texts"]) / float(rates["embed_texts_per_s"])
               + float(use["token_count_texts"]) / float(rates["tokenize_texts_per_s"]))
    return round(seconds, 1)


def skipped(suite: int, chunks: int, max_pairs: int) -> dict[str, Any] | None:
    pairs = suite * chunks
    if pairs <= max_pairs:
        return None
    return {"suite": suite, "pairs": pairs,
            "skipped": f"{pairs:,} question x chunk cosines exceed --max-pairs {max_pairs:,}, the grid's time bound"}


def corpus_row(root: Path, target: int, suites: list[int], words: list[str], profile: bool,
               rates: dict[str, Any] | None, max_pairs: int) -> dict[str, Any]:
    for sub in ("corpus", "goldens", "data", "runs"):
        shutil.rmtree(root / sub, ignore_errors=True)
    row: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "target_chunks": target}
    if skip := skipped(min(suites), target, max_pairs):
        return {**row, "cold": skip, "warm": {}}
    row.update(write_corpus(root / "corpus", target, words))
    t = time.perf_counter()
    write_suites(root / "goldens", suites, row["documents"], words)
    row["suites_generate_s"] = round(time.perf_counter() - t, 1)
    print(f"corpus {target:,}: {row['documents']:,} documents, {row['chunks_expected']:,} chunks, "
          f"{row['corpus_mb']} MB in {row['generate_s']} s", flush=True)
    cold = run_cell(root, min(suites), f"c{target}-cold", profile)
    if rates:
        cold["minilm_predicted_s"] = predicted_minilm_s(cold, rates)
    row["cold"] = cold
    print(f"  cold: {json.dumps(cold)}", flush=True)
    row["prefill_queries_s"] = prefill_queries(root, max(suites))
    row["warm"] = {}
    for n in sorted(suites):
        cell = skipped(n, row["chunks_expected"], max_pairs) or run_cell(root, n, f"c{target}-q{n}", profile)
        if cell.get("counts", {}).get("embedding_model_calls"):
            print(f"  warning: warm run q{n} called the embedder {cell['counts']['embedding_model_calls']} times")
        row["warm"][str(n)] = cell
        print(f"  warm q{n}: {json.dumps(cell)}", flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="1000,10000,100000,1000000", help="corpus sizes in chunks")
    ap.add_argument("--suite", default="100,1000,10000", help="suite sizes in questions")
    ap.add_argument("--minilm-texts", type=int, default=300, help="texts for MiniLM's rate; 0 keeps the file's")
    ap.add_argument("--keep", default=None, help="work in this folder and keep it (runs, logs, profiles)")
    ap.add_argument("--profile", action="store_true", help="run each child under cProfile (<run>.prof in the folder)")
    ap.add_argument("--max-pairs", type=float, default=1.1e10,
                    help="skip cells with more questions x chunks than this (time: see the module docstring)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    corpora = [int(x) for x in args.corpus.split(",")]
    suites = sorted(int(x) for x in args.suite.split(","))
    out = Path(args.out)
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    words = word_stream()
    if args.minilm_texts:
        results["minilm"] = minilm_rates(words, args.minilm_texts)
        print(f"MiniLM: {json.dumps(results['minilm'])}", flush=True)
    rates = results.get("minilm")
    results.update({"date": time.strftime("%Y-%m-%d"), "definitions": DEFINITIONS,
                    "machine": {"cores": os.cpu_count(),
                                "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)},
                    "vocabulary": {"source": "corpus/*.md words at their frequencies", "words": len(words),
                                   "distinct": len(Counter(words))}})
    results.setdefault("corpora", {})
    results["max_pairs"] = int(args.max_pairs)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        for target in corpora:
            results["corpora"][str(target)] = corpus_row(root, target, suites, words, args.profile, rates,
                                                          int(args.max_pairs))
            results["corpora"] = dict(sorted(results["corpora"].items(), key=lambda kv: int(kv[0])))
            out.write_text(json.dumps(results, indent=1) + "\n")  # after each row: a later failure keeps it
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
