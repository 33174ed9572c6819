"""The upstream view: upstream NOMAD's metric definitions, held to the issue's worked examples and to the cases
upstream's own unit tests hand-compute (expected values computed from the definitions, not captured)."""

from __future__ import annotations

import math

import pytest

from nomad_eval.metrics.registry import REGISTRY, spec_for
from nomad_eval.metrics.upstream import generation as gen
from nomad_eval.metrics.upstream.retrieval import (
    aggregate,
    case_values,
    document_ranking,
    hit_rate_at_k,
    mean_of,
    metric_names,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from nomad_eval.metrics.upstream.separation import advice, describe, fixed3, split_scores

LEAD, LITH, ROTA = "power-lead-acid", "power-lithium", "power-rota"


@pytest.mark.parametrize(("chunks", "relevant", "expected"), [
    (["A", "A", "A", "R", "B"], ["R"], {"recall@3": 0.0, "hitRate@3": 0.0, "precision@3": 0.0, "mrr": 0.25}),
    (["R1", "R1", "X", "R2"], ["R1", "R2"], {"recall@3": 0.5, "precision@5": 0.75}),
    (["R"], ["R"], {"precision@3": 1.0, "precision@5": 1.0}),
    ([], ["R"], {"precision@5": 0.0}),
    ([LEAD, LITH, LEAD, LITH, ROTA], [ROTA, LITH], {"recall@3": 0.5}),
])
def test_the_issues_worked_examples(chunks: list[str], relevant: list[str], expected: dict[str, float]) -> None:
    values = case_values(chunks, relevant, expect_refusal=False, ks=(1, 3, 5, 10))
    assert {name: values[f"upstream.{name}"] for name in expected} == expected


def test_precision_is_chunk_level_over_what_came_back() -> None:
    assert precision_at_k(["a", "a", "x", "y"], ["a"], 4) == 0.5  # not deduplicated
    assert precision_at_k(["a", "a"], ["a"], 5) == 1.0  # over min(k, returned), not k
    assert precision_at_k([], ["a"], 5) == 0.0
    assert precision_at_k(["a", None, "x"], ["a"], 3) == pytest.approx(1 / 3)  # an unresolved chunk holds a rank


def test_recall_hit_and_rank_look_at_chunks_not_documents() -> None:
    assert recall_at_k(["a", "x", "b"], ["a", "b"], 2) == 0.5
    assert recall_at_k(["a", "a", "a"], ["a", "b"], 5) == 0.5  # distinct documents found
    assert recall_at_k(["x"], [], 5) is None and hit_rate_at_k(["x"], [], 5) is None
    assert hit_rate_at_k(["x", "y", "a"], ["a"], 2) == 0.0 and hit_rate_at_k(["x", "a"], ["a", "b"], 5) == 1.0
    assert reciprocal_rank(["x", "y", "a"], ["a"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "x", "x", "a"], ["a"]) == 0.25  # duplicates of one document are ranks too
    assert reciprocal_rank(["x"], ["a"]) == 0.0 and reciprocal_rank([], []) is None


def test_ndcg_ranks_distinct_documents_against_the_known_relevant_count() -> None:
    assert document_ranking(["a", "b", "a", None, "c", "b"]) == ["a", "b", "c"]
    assert ndcg_at_k(["x", "a"], ["a"], 5) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["a", "x", "y"], ["a", "b", "c"], 5) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))
    assert ndcg_at_k(["a", "a", "a"], ["a", "b"], 5) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["a", "b", "c"], ["a", "b", "c"], 1) == 1.0
    # documents, not chunks: a's second chunk does not push b out of the top 2
    assert ndcg_at_k(["a", "a", "b"], ["a", "b"], 2) == 1.0


def test_k_past_what_came_back_is_measured_as_upstream_reports_it() -> None:
    values = case_values(["a", "x", "y", "z", "b"], ["a", "b"], expect_refusal=False)
    assert values["upstream.recall@10"] == values["upstream.recall@5"] == 1.0
    assert values["upstream.precision@10"] == values["upstream.precision@5"] == 0.4
    assert "upstream.ndcg@10" in metric_names() and "upstream.mrr" in metric_names()


def test_refusal_questions_measure_only_the_refusal_rate_and_means_skip_nulls() -> None:
    refusal = case_values(["x"], [], expect_refusal=True)
    assert refusal["upstream.nonEmptyRateOnRefusal"] == 1.0 and refusal["upstream.emptyRateOnAnswerable"] is None
    assert refusal["upstream.recall@5"] is None and refusal["upstream.mrr"] is None
    answered = case_values([], ["a"], expect_refusal=False)
    assert answered["upstream.emptyRateOnAnswerable"] == 1.0 and answered["upstream.nonEmptyRateOnRefusal"] is None
    means = aggregate([refusal, answered, case_values(["a"], ["a"], False)], metric_names())
    assert means["upstream.recall@5"] == 0.5 and means["upstream.emptyRateOnAnswerable"] == 0.5
    assert means["upstream.nonEmptyRateOnRefusal"] == 1.0
    assert mean_of([None, None]) is None and mean_of([1.0, None, 3.0]) == 2.0


def test_upstream_names_resolve_to_the_upstream_view_not_to_ours() -> None:
    spec = spec_for("upstream.precision@3")
    assert spec is not None and spec is not REGISTRY["precision"] and "min(k" in spec.definition
    assert spec_for("upstream.hitRate@10") is not None and spec_for("hitRate@10") is None
    assert spec_for("upstream.e2e.correctness") is not REGISTRY["correctness"]
    assert spec_for("upstream.emptyRateOnAnswerable").direction == "lower"  # type: ignore[union-attr]
    assert spec_for("upstream.nope@3") is None and spec_for("precision@3") is REGISTRY["precision"]


def test_score_separation_uses_nearest_rank_quantiles_of_the_retrieved_chunks() -> None:
    d = describe([0.5, 0.1, 0.4, 0.2, 0.3])
    assert d is not None and (d.count, d.min, d.median, d.max) == (5, 0.1, 0.3, 0.5)
    assert d.p10 == 0.1 and d.p90 == 0.5 and d.mean == pytest.approx(0.3)
    assert describe([]) is None
    rel, irr = split_scores([([("a", 0.9), ("x", 0.5), (None, 0.4)], ["a"]), ([("a", 0.7)], [])])
    assert (rel, irr) == ([0.9], [0.5, 0.4, 0.7])  # a refusal question's chunks are all irrelevant


def test_separation_advice_reads_clean_or_overlapping() -> None:
    clean = advice(describe([0.8, 0.9]), describe([0.2, 0.3]))
    assert clean == ["Clean separation: a threshold between 0.300 and 0.800 splits them."]
    overlap = advice(describe([0.4, 0.9]), describe([0.2, 0.5]))
    assert overlap[0] == "Overlapping: relevant p10 (0.400) sits below irrelevant p90 (0.500)."
    assert "retriever needs work" in overlap[1] and advice(None, describe([0.1])) == []
    assert fixed3(0.0005) == "0.001" and fixed3(1.0) == "1.000" and fixed3(0.1235) == "0.123"  # exact binary


@pytest.mark.parametrize("text", [
    "I don't know the answer to that.", "I do not have that information.", "I'm not able to answer that question.",
    "I am unable to determine that.", "I couldn't find anything about that.",
    "There is no information available on that topic.", "That is not mentioned anywhere.",
    "The documentation does not specify a warranty period.", "That isn't covered here.",
    "I'd need more detail to answer that.",
])
def test_upstream_refusal_phrasings(text: str) -> None:
    assert gen.detect_refusal(text)


@pytest.mark.parametrize("text", [
    "Boil the water for three minutes above 6,500 feet.", "Do not use ice on a burn; cool it for 20 minutes.",
    "Water bath canning is not suitable for green beans, so use a pressure canner.",
    "You know the water is safe once it has held a rolling boil.",
])
def test_substantive_answers_are_not_refusals(text: str) -> None:
    assert not gen.detect_refusal(text)


def test_upstream_leakage_think_tag_and_markdown() -> None:
    for leak in ("According to the context, boil it.", "Context 1 describes it.", "The knowledge base says so.",
                 "I found no relevant context for this.", "From the search results, 10 psi."):
        assert gen.detect_leakage(leak), leak
    assert gen.detect_leakage("In a wilderness context, a tourniquet is the priority.") == []
    assert gen.has_think_tag("<think>hmm</think>3 minutes.") and not gen.has_think_tag("I think so.")
    for md in ("## Heading\n\ntext", "- one\n- two", "1. first", "use **bold** here", "| a | b |", "run `x`"):
        assert gen.is_markdown(md), md
    # upstream's markdown is looser on lists and stricter on emphasis than this project's
    assert not gen.is_markdown("Use *two* cups.") and not gen.is_markdown("Just a plain sentence.")
    assert not gen.is_markdown("Use\u00a0two\u00a0cups.")
    assert gen.is_markdown("\u00a0- one")  # JavaScript's \s holds the no-break space


def test_upstream_detectors_are_ascii_like_a_javascript_regex_without_the_u_flag() -> None:
    assert not gen.detect_refusal("I don\u2019t know.")  # a curly apostrophe is not upstream's '
    assert gen.has_think_tag("<THINK>") and not gen.detect_leakage("context \u0661")  # \d is ASCII


def test_upstream_correctness_counts_refusal_questions_by_their_patterns() -> None:
    refusal = gen.score_answer("The pump weighs 12 kg.", [], [], expect_refusal=True)
    assert refusal.correct and not refusal.refusal_correct  # no patterns: correct whatever it says
    answered = gen.score_answer("Boil for 3 minutes.", [r"3 minutes|three minutes"], [r"\b10 minutes"], False)
    assert answered.correct and answered.refusal_correct
    wrong = gen.score_answer("Boil for 10 minutes.", [r"minutes"], [r"\b10 minutes"], False)
    assert not wrong.correct
    values = gen.case_values(refusal)
    assert values["correctness"] == 1.0 and values["refusalCorrectness"] == 0.0


def test_upstream_generation_means_pass_rates_per_question_and_pools_the_detectors() -> None:
    def answer(correct: bool, markdown: bool) -> dict[str, float]:
        return {"correctness": float(correct), "refusalCorrectness": 1.0, "leakageRate": 0.0,
                "thinkTagLeakRate": 0.0, "markdownRate": float(markdown)}
    # q1 answered three times (2 of 3 correct), q2 once (wrong, one fewer repeat after an error)
    rows = [("q1", answer(True, True)), ("q1", answer(True, True)), ("q1", answer(False, True)),
            ("q2", answer(False, False))]
    means = gen.aggregate(rows)
    assert means["correctness"] == pytest.approx((2 / 3 + 0) / 2)  # the mean of pass rates
    assert means["markdownRate"] == 0.75  # over every answer
    assert gen.aggregate([])["correctness"] is None
