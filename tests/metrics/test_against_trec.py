"""Every ranking kernel against pytrec_eval on randomized runs with tied scores, graded and binary relevance."""

from __future__ import annotations

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from nomad_eval.core.evaluate import ranking
from nomad_eval.metrics import REGISTRY
from nomad_eval.metrics.ranking import (
    average_precision_at_k,
    chunk_precision_at_k,
    hit_at_k,
    mrr_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)
from nomad_eval.rag.rerank import Candidate, order

DOCS = [f"d{i}" for i in range(12)]
KS = (1, 3, 5, 10)

runs = st.dictionaries(st.sampled_from(DOCS), st.sampled_from([0.1, 0.2, 0.5, 0.5, 0.7, 0.9, 0.95]),
                       min_size=1, max_size=12)
graded = st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=6).filter(
    lambda q: any(g > 0 for g in q.values()))


def pipeline_order(run: dict[str, float]) -> list[str]:
    """The pipeline's reranker breaks ties the way trec_eval and core.evaluate.ranking do."""
    return [c.chunk_id for c, _ in order([(Candidate(d, d, "", "", s), s) for d, s in run.items()])]


@settings(max_examples=300, deadline=None)
@given(runs, graded)
def test_document_kernels_match_trec_eval(run: dict[str, float], qrel: dict[str, int]) -> None:
    measures = {f"{m}.{','.join(map(str, KS))}" for m in ("recall", "P", "map_cut", "ndcg_cut", "success")}
    res = pytrec_eval.RelevanceEvaluator({"q": qrel}, measures | {"Rprec", "recip_rank"}).evaluate({"q": run})["q"]
    docs = ranking(run)
    assert docs == pipeline_order(run)
    for k in KS:
        assert recall_at_k(docs, qrel, k) == pytest.approx(res[f"recall_{k}"], abs=1e-9)
        assert precision_at_k(docs, qrel, k) == pytest.approx(res[f"P_{k}"], abs=1e-9)
        assert average_precision_at_k(docs, qrel, k) == pytest.approx(res[f"map_cut_{k}"], abs=1e-9)
        assert ndcg_at_k(docs, qrel, k) == pytest.approx(res[f"ndcg_cut_{k}"], abs=1e-9)
        assert hit_at_k(docs, qrel, k) == res[f"success_{k}"]
        # MRR@k: trec_eval has no cut-off for recip_rank, so cut the run to its top k first.
        top = {d: run[d] for d in docs[:k]}
        cut = pytrec_eval.RelevanceEvaluator({"q": qrel}, {"recip_rank"}).evaluate({"q": top})["q"]
        assert mrr_at_k(docs, qrel, k) == pytest.approx(cut["recip_rank"], abs=1e-9)
    assert r_precision(docs, qrel) == pytest.approx(res["Rprec"], abs=1e-9)
    assert reciprocal_rank(docs, qrel) == pytest.approx(res["recip_rank"], abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(DOCS[:5]), min_size=0, max_size=15), st.sets(st.sampled_from(DOCS[:6]), min_size=1))
def test_chunk_precision_is_trec_precision_over_chunks(chunk_docs: list[str], rel: set[str]) -> None:
    """Chunk level: each chunk is judged by its document, and like trec_eval's P_k the count is over k."""
    chunk_ids = [f"{d}#{i}" for i, d in enumerate(chunk_docs)]
    run = {"q": {cid: float(len(chunk_ids) - i) for i, cid in enumerate(chunk_ids)}}
    qrels = {"q": {cid: int(d in rel) for cid, d in zip(chunk_ids, chunk_docs, strict=True)} | {"__rel__": 1}}
    res = pytrec_eval.RelevanceEvaluator(qrels, {"P.1,3,5,10"}).evaluate(run)["q"]
    for k in KS:
        assert chunk_precision_at_k(chunk_docs, dict.fromkeys(rel, 1), k) == pytest.approx(res[f"P_{k}"], abs=1e-9)


def test_graded_ndcg_uses_the_grade_as_gain() -> None:
    # Grade 3 at rank 2, grade 1 at rank 1; ideal puts the 3 first.
    value = ndcg_at_k(["a", "b"], {"a": 1, "b": 3}, 2)
    assert value == pytest.approx((1 + 3 / 1.5849625007211563) / (3 + 1 / 1.5849625007211563))
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)


def test_unmeasurable_is_none_and_an_empty_answer_is_zero() -> None:
    for spec in REGISTRY.values():
        if spec.kernel is not None:
            assert spec.kernel(["a"], {}, 5 if spec.parametrized else None) is None, spec.family
            assert spec.kernel(["a"], {"a": 0}, 5 if spec.parametrized else None) is None, spec.family
            assert spec.kernel([], {"a": 1}, 5 if spec.parametrized else None) == 0.0, spec.family
    assert chunk_precision_at_k(["a"], {"a": 1}, 5) == pytest.approx(0.2)  # over k, not over what came back


def test_a_cut_off_below_one_is_refused() -> None:
    for spec in REGISTRY.values():
        if spec.kernel is not None and spec.parametrized:
            with pytest.raises(ValueError, match="k=0"):
                spec.kernel(["a"], {"a": 1}, 0)
