"""Kendall τ between a retrieval metric and answers across jobs, with a bootstrap over questions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nomad_eval.core.questions import Question
from nomad_eval.core.rank_correlation import kendall_tau, metric_vs_answers, retrieval_metrics, tau_interval

METRIC, ANSWER = "e2e.recall@5", "e2e.correctness"


def _q(qid: str, recall: float | None, correct: float | None, unstable: bool = False) -> Question:
    return Question(key=f"e2e:{qid}", id=qid, mode="e2e", cluster=f"doc:{qid}",
                    values={METRIC: recall, "e2e.mrr@5": recall, ANSWER: correct, "e2e.groundedness": 0.5},
                    passed=correct, repeats=1, unstable=unstable)


def _jobs(recalls: np.ndarray, corrects: np.ndarray) -> dict[str, list[Question]]:
    return {f"job{j}": [_q(f"q{i}", float(recalls[j, i]), float(corrects[j, i])) for i in range(recalls.shape[1])]
            for j in range(recalls.shape[0])}


def test_point_value_is_scipy_tau_b_on_the_job_means_ties_included() -> None:
    rng = np.random.default_rng(3)
    recalls = (rng.random((6, 12)) < np.linspace(0.3, 0.9, 6)[:, None]).astype(float)
    recalls[4] = recalls[3]  # a tie between two jobs' recall means: τ-b, not τ-a
    corrects = (rng.random((6, 12)) < 0.6).astype(float)
    (row, _) = metric_vs_answers(_jobs(recalls, corrects), [METRIC, "e2e.mrr@5"], ANSWER, resamples=300)
    expected = stats.kendalltau(recalls.mean(axis=1), corrects.mean(axis=1)).statistic
    assert row.tau == pytest.approx(expected, abs=1e-12)
    assert row.n_jobs == 6 and row.n_questions == 12
    assert row.means["job2"] == pytest.approx((recalls[2].mean(), corrects[2].mean()))
    assert row.low is not None and row.high is not None and row.low <= row.tau <= row.high


def test_interval_is_wide_for_few_questions_and_narrows_with_many() -> None:
    rng = np.random.default_rng(0)
    p = np.linspace(0.2, 0.8, 5)[:, None]  # five configurations; answers truly rise with recall (τ = 1)

    def interval(n: int) -> tuple[float, float, float]:
        recalls = (rng.random((5, n)) < p).astype(float)
        corrects = (rng.random((5, n)) < 0.3 + 0.5 * p).astype(float)
        tau, low, high, defined = tau_interval(recalls, corrects, resamples=1000, seed=1)
        assert tau is not None and low is not None and high is not None and defined > 900
        assert low <= tau <= high
        return tau, low, high

    _, low, high = interval(4)
    assert high - low > 0.9 and low < 0  # four questions cannot tell a predictor from none
    tau, low, high = interval(400)
    assert tau == pytest.approx(1.0) and high - low < 0.3 and low > 0.5


def test_constant_answers_make_tau_undefined_not_zero() -> None:
    recalls = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=float)
    corrects = np.ones((4, 3))
    (row,) = metric_vs_answers(_jobs(recalls, corrects), [METRIC], ANSWER)
    assert row.tau is None and row.low is None and row.high is None
    assert row.reason is not None and "answers" in row.reason and "retrieval" not in row.reason
    assert kendall_tau([1.0, 1.0, 1.0], [0.1, 0.5, 0.2]) is None


def test_fewer_than_three_jobs_is_not_measured() -> None:
    recalls = np.array([[1, 0, 1], [0, 0, 1]], dtype=float)
    (row,) = metric_vs_answers(_jobs(recalls, recalls), [METRIC], ANSWER)
    assert row.tau is None and row.reason is not None and "3" in row.reason


def test_only_questions_every_job_measured_stably_count() -> None:
    recalls = np.array([[1, 0, 1, 0], [1, 1, 1, 0], [0, 0, 1, 1], [0, 0, 0, 1]], dtype=float)
    corrects = np.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]], dtype=float)
    jobs = _jobs(recalls, corrects)
    jobs["job0"] = [q for q in jobs["job0"] if q.id != "q3"]  # q3 missing from one job
    jobs["job2"][1] = _q("q1", 0.0, 0.0, unstable=True)  # q1 flips in one job
    (row,) = metric_vs_answers(jobs, [METRIC], ANSWER, resamples=200)
    assert row.n_questions == 2  # q0 and q2
    keep = [0, 2]
    expected = stats.kendalltau(recalls[:, keep].mean(axis=1), corrects[:, keep].mean(axis=1)).statistic
    assert row.tau == pytest.approx(expected)


def test_seeded_and_picks_retrieval_metrics_only() -> None:
    rng = np.random.default_rng(5)
    recalls = rng.random((4, 10))
    corrects = (recalls + rng.random((4, 10)) > 1).astype(float)
    jobs = _jobs(recalls, corrects)
    assert retrieval_metrics(jobs) == [METRIC, "e2e.mrr@5"]  # not correctness nor groundedness
    a = metric_vs_answers(jobs, resamples=300, seed=7)
    b = metric_vs_answers(jobs, resamples=300, seed=7)
    assert [(r.tau, r.low, r.high) for r in a] == [(r.tau, r.low, r.high) for r in b]
