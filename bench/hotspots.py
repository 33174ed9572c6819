"""Micro-benchmarks of the hot spots issue 18 removed, each timed before and after on the same inputs.

python bench/hotspots.py  -> bench/results/hotspots.json

"Before" is the earlier algorithm, rebuilt here only to time it (and to check the new one gives the same answer):
- rerank: the same-document penalty as a scan of every remaining candidate at every pick (O(n^2)), against the
  heap of one entry per document (O(n log d)), at 400 candidates over 60 documents; and penalty 0 (skipped now);
- generation context: oracle passages with a scan of every chunk per golden (and a fresh set per chunk), against
  maps built once per run, on the core suite (warm embedding cache);
- ablation: one query-embedding call per question, against one batch, through the cached embedder;
- lint: every mustInclude pattern searched in every document for every golden, against a count per distinct
  pattern that stops once the rest cannot take it past half, on the core suite with its corpus repeated 20 times.
Each timing is the median of several repeats on this machine (2 cores).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nomad_eval.rag.rerank import Candidate, Scored, order, penalise_same_doc  # noqa: E402


def timed(fn: Callable[[], Any], repeats: int = 5) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def greedy_scan(scored: list[tuple[Candidate, float]], penalty: float) -> list[Scored]:
    pool = order(scored)
    picked: list[Scored] = []
    per_doc: dict[str, int] = {}
    while pool:
        best_i, best_s = 0, float("-inf")
        for i, (c, s) in enumerate(pool):
            adj = s - penalty * per_doc.get(c.doc_id, 0)
            if adj > best_s:
                best_i, best_s = i, adj
        c, _ = pool.pop(best_i)
        per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
        picked.append(Scored(c, best_s))
    return picked


def rerank() -> dict[str, Any]:
    rng = random.Random(7)
    scored = [(Candidate(f"d{rng.randrange(60)}#{i}", "", "", "", 0.0), round(rng.random(), 3)) for i in range(400)]
    scored = [(Candidate(c.chunk_id, c.chunk_id.split("#")[0], "", "", s), s) for c, s in scored]
    before, want = timed(lambda: greedy_scan(scored, 0.05))
    after, got = timed(lambda: penalise_same_doc(scored, 0.05))
    zero_before, _ = timed(lambda: greedy_scan(scored, 0.0))
    zero_after, zero = timed(lambda: penalise_same_doc(scored, 0.0))
    same = [(x.candidate.chunk_id, x.final_score) for x in got] == [(x.candidate.chunk_id, x.final_score) for x in want]
    return {"candidates": 400, "documents": 60, "before_ms": round(before * 1000, 3),
            "after_ms": round(after * 1000, 3),
            "penalty_0_before_ms": round(zero_before * 1000, 3), "penalty_0_after_ms": round(zero_after * 1000, 3),
            "same_order_and_scores": same and len(zero) == 400}


def _runtime(*overrides: str) -> Any:
    from hydra import compose, initialize_config_dir

    from nomad_eval.cli.config_check import typed
    from nomad_eval.cli.resolvers import register_resolvers
    from nomad_eval.config.settings import runtime

    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base=None):
        cfg = compose("config", overrides=["quiet=true", *overrides])
    return runtime(typed(cfg)), cfg


def context_and_ablation() -> dict[str, Any]:
    import numpy as np
    from hydra.utils import instantiate

    from nomad_eval.run.generation_context import CorpusMaps, _passage, oracle_passages

    rt, cfg = _runtime()
    pipeline = instantiate(cfg.pipeline)
    goldens = [g for g in rt.goldens if g.relevant_doc_ids]
    emb = rt.cached_embedder
    emb.embed_documents([c.text for c in rt.chunks])  # warm: both sides read the cache

    def before() -> list[list[str]]:
        out = []
        for g in goldens:
            titles = {d.doc_id: d.title for d in rt.documents}
            chunks = [c for c in rt.chunks if c.doc_id in set(g.relevant_doc_ids)]
            docs = emb.embed_documents([c.text for c in chunks])
            q = emb.embed_queries([pipeline.expand(g.final_query)])[0]
            sims = docs @ q / (np.linalg.norm(docs, axis=1) * np.linalg.norm(q) + 1e-12)
            idx = sorted(range(len(chunks)), key=lambda i: (-float(sims[i]), chunks[i].chunk_id))
            out.append([_passage(chunks[i], titles).chunk_id for i in idx])
        return out

    def after() -> list[list[str]]:
        maps = CorpusMaps.build(rt, goldens)
        return [[p.chunk_id for p in oracle_passages(rt, g, pipeline, g.final_query, maps)] for g in goldens]

    t_before, want = timed(before, 3)
    t_after, got = timed(after, 3)
    queries = [g.final_query for g in rt.goldens]
    one_by_one, _ = timed(lambda: [emb.embed_queries([q]) for q in queries], 3)
    batched, _ = timed(lambda: emb.embed_queries(queries), 3)
    return {
        "generation_context": {"goldens": len(goldens), "chunks": len(rt.chunks), "before_s": round(t_before, 4),
                               "after_s": round(t_after, 4), "same_passages": want == got},
        "ablation_query_embeddings": {"questions": len(queries), "one_call_each_s": round(one_by_one, 4),
                                      "one_batch_s": round(batched, 4), "cache": "warm"},
    }


def lint_bench() -> dict[str, Any]:
    from dataclasses import replace

    from nomad_eval.base.patterns import search
    from nomad_eval.data import lint as lint_module

    rt, _ = _runtime()
    docs = [replace(d, doc_id=f"{d.doc_id}-{i}") for i in range(20) for d in rt.documents]
    path = rt.suite_path
    texts = [d.text for d in docs if not d.distractor]

    def before() -> int:  # the old inner count, over every golden's every pattern and every document
        return sum(sum(1 for t in texts if search(p, t)) for g in rt.all_goldens for p in g.must_include)

    t_before, _ = timed(before, 1)
    t_after, findings = timed(lambda: lint_module.lint(rt.all_goldens, docs, path), 1)
    return {"goldens": len(rt.all_goldens), "documents": len(docs), "before_count_s": round(t_before, 3),
            "after_whole_lint_s": round(t_after, 3), "findings": len(findings),
            "note": "before times only the old document count; after times the whole lint, that count included"}


def main() -> None:
    out = {"machine": {"cores": 2}, "date": time.strftime("%Y-%m-%d"), "rerank": rerank(), **context_and_ablation(),
           "lint": lint_bench()}
    path = REPO / "bench" / "results" / "hotspots.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
