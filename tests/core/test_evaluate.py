"""core.evaluate against pytrec_eval on random graded and binary qrels and runs with tied scores; core.runs."""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from nomad_eval.core.evaluate import evaluate, ranking
from nomad_eval.core.runs import order_consistent, scores_from_order
from nomad_eval.metrics import REGISTRY

KS = (1, 3, 5, 10)
# Our reported name -> pytrec_eval's result key, written out so a wrong `trec` field in the registry shows.
OURS_TO_TREC = {f"precision@{k}": f"P_{k}" for k in KS} | {f"recall@{k}": f"recall_{k}" for k in KS} \
    | {f"map@{k}": f"map_cut_{k}" for k in KS} | {f"ndcg@{k}": f"ndcg_cut_{k}" for k in KS} \
    | {f"hit@{k}": f"success_{k}" for k in KS} | {"rprec": "Rprec", "rr": "recip_rank"}
TREC_MEASURES = {"P.1,3,5,10", "recall.1,3,5,10", "map_cut.1,3,5,10", "ndcg_cut.1,3,5,10", "success.1,3,5,10",
                 "Rprec", "recip_rank"}

# Ids of different lengths and a shared prefix, so "descending id" is a real string order, not a numeric one.
DOCS = ["a", "b", "ab", "b1", "d10", "d2", "d9", "x", "xy", "z", "Z", "q-1"]
QIDS = ["q1", "q2", "q3", "q4"]
SCORES = st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, 1.0, -0.5, 2.0, 0.1 + 0.2])


def qrels_strategy(grade: st.SearchStrategy[int]) -> st.SearchStrategy[dict[str, dict[str, int]]]:
    return st.dictionaries(st.sampled_from(QIDS), st.dictionaries(st.sampled_from(DOCS), grade, min_size=1,
                                                                   max_size=8), min_size=1, max_size=4)


scored_runs = st.dictionaries(st.sampled_from(QIDS), st.dictionaries(st.sampled_from(DOCS), SCORES, max_size=12),
                              max_size=4)


def trec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)  # type: ignore[no-any-return]


def check(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], ours: dict[str, dict[str, float | None]]
          ) -> None:
    theirs = trec(qrels, run)
    judged = {q for q, rels in qrels.items() if any(g > 0 for g in rels.values())}
    assert set(ours) == judged
    for qid in judged:
        for name, key in OURS_TO_TREC.items():
            value = ours[qid][name]
            assert value is not None
            # pytrec_eval leaves out a query the run does not hold; we score it on an empty ranking.
            expected = theirs[qid][key] if qid in theirs else 0.0
            assert math.isclose(value, expected, abs_tol=1e-9), (qid, name, value, expected)


@settings(max_examples=250, deadline=None)
@given(qrels_strategy(st.integers(0, 3)), scored_runs)
def test_graded_scored_runs_match_pytrec_eval(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
                                              ) -> None:
    check(qrels, run, evaluate(qrels, run, OURS_TO_TREC))


@settings(max_examples=150, deadline=None)
@given(qrels_strategy(st.integers(0, 1)), scored_runs)
def test_binary_scored_runs_match_pytrec_eval(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
                                              ) -> None:
    check(qrels, run, evaluate(qrels, run, OURS_TO_TREC))


@settings(max_examples=150, deadline=None)
@given(qrels_strategy(st.integers(0, 3)),
       st.dictionaries(st.sampled_from(QIDS), st.lists(st.sampled_from(DOCS), unique=True, max_size=12), max_size=4))
def test_list_runs_are_taken_in_their_order(qrels: dict[str, dict[str, int]], lists: dict[str, list[str]]) -> None:
    as_scores = {q: dict(zip(ids, scores_from_order(ids), strict=True)) for q, ids in lists.items()}
    check(qrels, as_scores, evaluate(qrels, lists, OURS_TO_TREC))


def test_every_registered_trec_measure_is_cross_checked() -> None:
    """A document kernel naming a trec_eval measure must be in the table above, under that measure."""
    for spec in REGISTRY.values():
        if spec.kernel is not None and spec.trec is not None:
            name = spec.name(5)
            assert OURS_TO_TREC[name] == (f"{spec.trec}_5" if spec.parametrized else spec.trec), name


def test_ties_are_broken_by_id_descending() -> None:
    assert ranking({"a": 1.0, "b": 1.0, "ab": 1.0, "c": 2.0}) == ["c", "b", "ab", "a"]
    # A list run is not reordered, a scored one is.
    qrels = {"q": {"a": 1}}
    assert evaluate(qrels, {"q": ["a", "b"]}, ["rr"]) == {"q": {"rr": 1.0}}
    assert evaluate(qrels, {"q": {"a": 1.0, "b": 1.0}}, ["rr"]) == {"q": {"rr": 0.5}}


def test_queries_without_relevant_documents_are_left_out_and_missing_runs_score_zero() -> None:
    out = evaluate({"q": {"a": 0}, "r": {"a": 2}}, {}, ["recall@5", "ndcg@5"])
    assert out == {"r": {"recall@5": 0.0, "ndcg@5": 0.0}}


@pytest.mark.parametrize("name", ["recall@0", "precision@-1", "ndcg@0", "map@0"])
def test_cut_off_below_one_raises_naming_the_measure(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, [name])


@pytest.mark.parametrize("name", ["recal@5", "P_5", "recall", "rr@5", "recall@x", "correctness", "returned",
                                  "chunk_precision@5"])
def test_unknown_or_malformed_measures_raise_naming_the_measure(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, [name])


def test_a_list_run_with_a_repeated_document_is_refused() -> None:
    with pytest.raises(ValueError, match="more than once"):
        evaluate({"q": {"a": 1}}, {"q": ["a", "a"]}, ["rr"])


def test_order_consistent_follows_the_trec_tie_rule() -> None:
    assert order_consistent([])
    assert order_consistent([("a", 1.0)])
    assert order_consistent([("a", 3.0), ("b", 2.0), ("c", 1.0)])
    assert order_consistent([("b", 1.0), ("a", 1.0)])  # tie, ids descending
    assert not order_consistent([("a", 1.0), ("b", 1.0)])  # tie, ids ascending: trec_eval swaps them
    assert not order_consistent([("a", 1.0), ("b", 2.0)])  # a score that rises
    assert not order_consistent([("a", 1.0), ("a", 1.0)])  # the same pair twice has no place
    assert not order_consistent([("a", math.nan), ("b", 0.0)])


@given(st.lists(st.text(max_size=4), unique=True, max_size=20))
def test_scores_from_order_make_any_order_its_own_trec_order(ids: list[str]) -> None:
    scores = scores_from_order(ids)
    assert len(scores) == len(ids)
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert order_consistent(list(zip(ids, scores, strict=True)))
    assert ranking(dict(zip(ids, scores, strict=True))) == ids


@given(st.dictionaries(st.sampled_from(DOCS), SCORES, max_size=12))
def test_order_consistent_holds_exactly_for_the_trec_order(scored: dict[str, float]) -> None:
    ordered = ranking(scored)
    assert order_consistent([(d, scored[d]) for d in ordered])
    if len(ordered) > 1:
        swapped = [ordered[1], ordered[0], *ordered[2:]]
        assert not order_consistent([(d, scored[d]) for d in swapped])
