"""An independent recomputation of a retrieval report from its cases.jsonl with pytrec_eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytrec_eval


def trec_metrics(run_dir: Path, ks: tuple[int, ...] = (1, 3, 5)) -> dict[str, float]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for line in (run_dir / "cases.jsonl").read_text().splitlines():
        c = json.loads(line)
        if c["expect_refusal"]:
            continue
        qrels[c["id"]] = {d: 1 for d in c["relevant_doc_ids"]}
        docs: dict[str, float] = {}
        for r in c["retrieved"]:  # a document's score is its best chunk's
            docs[r["doc_id"]] = max(docs.get(r["doc_id"], float("-inf")), r["final_score"])
        run[c["id"]] = docs or {"__nothing__": 0.0}
    measures = {f"recall.{k}" for k in ks} | {f"ndcg_cut.{k}" for k in ks}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    out: dict[str, float] = {}
    n = len(res)
    for k in ks:
        out[f"recall@{k}"] = sum(r[f"recall_{k}"] for r in res.values()) / n
        out[f"ndcg@{k}"] = sum(r[f"ndcg_cut_{k}"] for r in res.values()) / n
        rr = []
        for qid, docs in run.items():
            top = dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k])
            rr.append(pytrec_eval.RelevanceEvaluator({qid: qrels[qid]}, {"recip_rank"}).evaluate(
                {qid: top})[qid]["recip_rank"])
        out[f"mrr@{k}"] = sum(rr) / len(rr)
    return out
