"""The upstream view's intervals come from the run's one summary of its questions (both views' metrics resampled
together), and equal what a separate summary of the view alone gives."""

from __future__ import annotations

import random

from nomad_eval.core.questions import questions_from_cases
from nomad_eval.metrics.upstream.retrieval import case_values, metric_names
from nomad_eval.records import Case
from nomad_eval.report.intervals import Bootstrap, summarize_report
from nomad_eval.report.upstream_view import as_view_cases, retrieval_view, view_ks, with_view_metrics
from tests.written import records

CFG = Bootstrap(cluster=False, seed=3, resamples=500)
OURS = ["recall@5", "ndcg@5", "returned", "nonEmptyRateOnRefusal"]


def _cases(n: int = 90, refusals: int = 12) -> list[Case]:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(15)]
    cases = []
    for i in range(n):
        refusal = i < refusals
        relevant = [] if refusal else rng.sample(docs, rng.randint(1, 3))
        chunks = rng.sample(docs, rng.randint(0 if refusal else 1, 6))
        found = len(set(chunks[:5]) & set(relevant)) / len(relevant) if relevant else None
        metrics = {"recall@5": found, "ndcg@5": None if found is None else round(found * rng.random(), 4),
                   "returned": float(len(chunks)), "nonEmptyRateOnRefusal": float(bool(chunks)) if refusal else None}
        cases.append({"id": f"q{i}", "tags": ["refusal" if refusal else "answerable"], "relevant_doc_ids": relevant,
                      "expect_refusal": refusal, "metrics": metrics,
                      "retrieved": [{"rank": r, "doc_id": d, "chunk_id": f"{d}#0", "score": 0.5, "final_score": 0.5}
                                    for r, d in enumerate(chunks, 1)],
                      "upstream": case_values(chunks, relevant, refusal, view_ks([5]))})
    return records(cases)


def test_one_summary_gives_both_views_the_intervals_separate_summaries_give() -> None:
    cases = _cases()
    view = metric_names(view_ks([5]))
    _, together = summarize_report(questions_from_cases(with_view_metrics(cases)), [*OURS, *view], CFG)
    _, ours = summarize_report(questions_from_cases(cases), OURS, CFG)
    _, alone = summarize_report(questions_from_cases(as_view_cases(cases)), view, CFG)
    assert {n: together[n] for n in OURS if n in together} == ours
    assert {n: together[n] for n in view if n in together} == alone
    # Refusal and answerable questions are different sets: both are in it, each over its own questions.
    assert alone["upstream.nonEmptyRateOnRefusal"].n == 12 and alone["upstream.recall@5"].n == 78
    assert alone["upstream.recall@5"].low < alone["upstream.recall@5"].high


def test_the_view_takes_its_own_names_from_the_intervals_it_is_given() -> None:
    cases = _cases()
    view = metric_names(view_ks([5]))
    _, together = summarize_report(questions_from_cases(with_view_metrics(cases)), [*OURS, *view], CFG)
    section = retrieval_view(cases, view_ks([5]), together)
    assert set(section.intervals) == {n for n in view if n in together}
    assert section.intervals == {n: together[n] for n in view if n in together}
    assert not set(section.intervals) & set(OURS)
