"""Per-golden retrieval scoring: pure functions from a Retrieval and a Golden to metric values."""

from __future__ import annotations

from typing import Any

from nomad_eval.data.golden import Golden
from nomad_eval.metrics.hit import hit_at_k
from nomad_eval.metrics.mrr import mrr_at_k
from nomad_eval.metrics.ndcg import ndcg_at_k
from nomad_eval.metrics.precision import chunk_precision_at_k
from nomad_eval.metrics.recall import recall_at_k
from nomad_eval.metrics.refusal_retrieval import non_empty
from nomad_eval.rag.pipeline import RetrievedChunk


def ranked_documents(chunks: list[RetrievedChunk]) -> list[str]:
    """Distinct documents in the order the pipeline first returns them: the unit of the @k window."""
    return list(dict.fromkeys(c.doc_id for c in chunks))


def metric_names(ks: list[int]) -> list[str]:
    fams = ("recall", "hit", "mrr", "ndcg", "chunk_precision")
    return [f"{f}@{k}" for f in fams for k in ks] + ["nonEmptyRateOnRefusal"]


def case_metrics(golden: Golden, chunks: list[RetrievedChunk], ks: list[int]) -> dict[str, float | None]:
    """Refusal goldens get only nonEmptyRateOnRefusal; answerable ones everything else."""
    out: dict[str, float | None] = {name: None for name in metric_names(ks)}
    if golden.expect_refusal:
        out["nonEmptyRateOnRefusal"] = non_empty(len(chunks))
        return out
    rel = set(golden.relevant_doc_ids)
    docs = ranked_documents(chunks)
    chunk_docs = [c.doc_id for c in chunks]
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(docs, rel, k)
        out[f"hit@{k}"] = hit_at_k(docs, rel, k)
        out[f"mrr@{k}"] = mrr_at_k(docs, rel, k)
        out[f"ndcg@{k}"] = ndcg_at_k(docs, rel, k)
        out[f"chunk_precision@{k}"] = chunk_precision_at_k(chunk_docs, rel, k)
    return out


def retrieved_rows(chunks: list[RetrievedChunk]) -> list[dict[str, Any]]:
    return [
        {"rank": c.rank, "doc_id": c.doc_id, "chunk_id": c.chunk_id, "score": c.score, "final_score": c.final_score}
        for c in chunks
    ]
