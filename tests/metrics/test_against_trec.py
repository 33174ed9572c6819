"""Every retrieval metric against pytrec_eval on randomized runs, with ties broken one documented way."""

from __future__ import annotations

import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from nomad_eval.metrics.hit import hit_at_k
from nomad_eval.metrics.mrr import mrr_at_k
from nomad_eval.metrics.ndcg import ndcg_at_k
from nomad_eval.metrics.precision import chunk_precision_at_k
from nomad_eval.metrics.recall import recall_at_k
from nomad_eval.rag.rerank import Candidate, order

DOCS = [f"d{i}" for i in range(12)]
KS = (1, 3, 5, 10)


def ranked(run: dict[str, float]) -> list[str]:
    """Our documented tie rule (score desc, then id desc), via the same function the pipeline uses."""
    cands = [(Candidate(d, d, "", "", s), s) for d, s in run.items()]
    return [c.chunk_id for c, _ in order(cands)]


runs = st.dictionaries(st.sampled_from(DOCS), st.sampled_from([0.1, 0.2, 0.5, 0.5, 0.7, 0.9, 0.95]),
                       min_size=1, max_size=12)
rels = st.sets(st.sampled_from(DOCS), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(runs, rels)
def test_doc_metrics_match_trec_eval(run: dict[str, float], rel: set[str]) -> None:
    qrels = {"q": {d: 1 for d in rel}}
    measures = {f"recall.{k}" for k in KS} | {f"ndcg_cut.{k}" for k in KS}
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate({"q": run})["q"]
    docs = ranked(run)
    for k in KS:
        assert abs(recall_at_k(docs, rel, k) - res[f"recall_{k}"]) < 1e-9  # type: ignore[operator]
        assert abs(ndcg_at_k(docs, rel, k) - res[f"ndcg_cut_{k}"]) < 1e-9  # type: ignore[operator]
        # MRR@k and hit@k: trec_eval has no cutoff for them, so cut the run to its top k first.
        top = {d: run[d] for d in docs[:k]}
        cut = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "success.1"}).evaluate({"q": top})["q"]
        assert abs(mrr_at_k(docs, rel, k) - cut["recip_rank"]) < 1e-9  # type: ignore[operator]
        hit = 1.0 if cut["recip_rank"] > 0 else 0.0
        assert hit_at_k(docs, rel, k) == hit


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(DOCS[:5]), min_size=1, max_size=15), rels)
def test_chunk_precision_matches_trec_precision(chunk_docs: list[str], rel: set[str]) -> None:
    """Chunk level: each chunk is judged by its document; trec_eval's P_k divides by k, ours by min(k, n)."""
    chunk_ids = [f"{d}#{i}" for i, d in enumerate(chunk_docs)]
    run = {"q": {cid: float(len(chunk_ids) - i) for i, cid in enumerate(chunk_ids)}}
    qrels = {"q": {cid: int(d in rel) for cid, d in zip(chunk_ids, chunk_docs, strict=True)} | {"__none__": 0}}
    res = pytrec_eval.RelevanceEvaluator(qrels, {f"P.{k}" for k in KS}).evaluate(run)["q"]
    for k in KS:
        ours = chunk_precision_at_k(chunk_docs, rel, k)
        assert ours is not None
        assert abs(ours - res[f"P_{k}"] * k / min(k, len(chunk_docs))) < 1e-9


def test_unmeasurable_is_none_never_zero() -> None:
    assert recall_at_k(["a"], set(), 5) is None
    assert chunk_precision_at_k([], {"a"}, 5) is None
    assert mrr_at_k([], {"a"}, 5) == 0.0  # nothing retrieved for an answerable question is a real miss
