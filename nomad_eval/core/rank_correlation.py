"""Which retrieval metric predicts answers: Kendall's τ across a sweep's jobs, with a bootstrap over questions.

Each job of a sweep is one retrieval configuration answered end to end. For a retrieval metric (e2e.recall@5)
and the answer metric (e2e.correctness), each job contributes one point: its two means over the same
questions. τ-b (scipy.stats.kendalltau) over those points says how well ranking configurations by the retrieval
number ranks them by answers. Its 95% interval resamples the question set once per replicate, jointly for every
job (the jobs answered the same questions, so their means move together), recomputes each job's means and τ,
and takes the percentile interval of the replicates where τ is defined.

τ is undefined (None, "not measured") when either side is constant across the jobs: nothing to rank.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from nomad_eval.core.questions import Question
from nomad_eval.metrics.registry import MetricName, spec_for

ANSWER_METRIC = "e2e.correctness"
MIN_JOBS = 3  # two points always rank perfectly (τ = ±1): no evidence either way
Array = NDArray[np.float64]


@dataclass(frozen=True)
class RankCorrelation:
    metric: str
    answer: str
    tau: float | None            # None: undefined (a side constant across jobs) or too few jobs/questions
    low: float | None
    high: float | None
    n_jobs: int
    n_questions: int
    level: float = 0.95
    resamples: int = 0            # bootstrap replicates drawn
    defined: int = 0              # of which τ was defined (the interval stands on these)
    reason: str | None = None     # why tau is None, in words
    means: dict[str, tuple[float, float]] = field(default_factory=dict)  # job -> (metric mean, answer mean)


def kendall_tau(x: Sequence[float] | Array, y: Sequence[float] | Array) -> float | None:
    """τ-b of two equally long sequences; None when undefined (a constant side, or fewer than two points)."""
    if len(x) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input and returns NaN: that is our None
        tau = float(stats.kendalltau(x, y, variant="b").statistic)
    return tau if math.isfinite(tau) else None


def tau_interval(metric: Array, answer: Array, *, level: float = 0.95, resamples: int = 2000, seed: int = 0
                 ) -> tuple[float | None, float | None, float | None, int]:
    """Point τ, interval low and high, and the number of replicates with a defined τ.

    `metric` and `answer` are jobs × questions matrices of per-question values (no missing values). Each
    replicate draws question indices with replacement, the same for every job and both matrices."""
    metric, answer = np.asarray(metric, dtype=np.float64), np.asarray(answer, dtype=np.float64)
    if metric.shape != answer.shape or metric.ndim != 2:
        raise ValueError(f"need two jobs × questions matrices of one shape, got {metric.shape} and {answer.shape}")
    point = kendall_tau(metric.mean(axis=1), answer.mean(axis=1))
    n = metric.shape[1]
    if point is None or n < 2 or resamples < 1:
        return point, None, None, 0
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    m_means = metric[:, idx].mean(axis=2)  # jobs × resamples
    a_means = answer[:, idx].mean(axis=2)
    taus = [t for r in range(resamples) if (t := kendall_tau(m_means[:, r], a_means[:, r])) is not None]
    if not taus:
        return point, None, None, 0
    low, high = np.quantile(taus, [(1 - level) / 2, (1 + level) / 2])
    return point, float(low), float(high), len(taus)


def retrieval_metrics(jobs: Mapping[str, Sequence[Question]], answer: str = ANSWER_METRIC) -> list[str]:
    """The retrieval measures the jobs scored in the answer's mode (e2e.recall@5, ...), in first-seen order."""
    mode = MetricName.parse(answer).mode
    names = dict.fromkeys(n for qs in jobs.values() for q in qs for n in q.values
                          if (s := spec_for(n)) is not None and s.tier == "retrieval"
                          and (mode is None or MetricName.parse(n).mode == mode))
    return list(names)


def metric_vs_answers(jobs: Mapping[str, Sequence[Question]], metrics: Sequence[str] | None = None,
                      answer: str = ANSWER_METRIC, *, level: float = 0.95, resamples: int = 2000, seed: int = 0
                      ) -> list[RankCorrelation]:
    """τ between each retrieval metric's job means and the answer metric's, on the questions every job measured.

    A question counts when it is stable in every job and every job measured both the metric and the answer
    for it; each job's means are over exactly those questions, so the jobs are compared on one question set."""
    names = list(metrics) if metrics is not None else retrieval_metrics(jobs, answer)
    by_job = {j: {q.key: q for q in qs} for j, qs in jobs.items()}
    unstable = {q.key for qs in jobs.values() for q in qs if q.unstable}
    return [_one(name, answer, by_job, unstable, level, resamples, seed) for name in names]


def _common_keys(name: str, answer: str, by_job: Mapping[str, Mapping[str, Question]], unstable: set[str]
                 ) -> list[str]:
    """The stable questions every job measured both the metric and the answer for, in the first job's order."""
    first: Mapping[str, Question] = next(iter(by_job.values()), {})
    return [k for k in first if k not in unstable and all(
        k in b and b[k].values.get(name) is not None and b[k].values.get(answer) is not None
        for b in by_job.values())]


def _one(name: str, answer: str, by_job: Mapping[str, Mapping[str, Question]], unstable: set[str], level: float,
         resamples: int, seed: int) -> RankCorrelation:
    order = list(by_job)
    keys = _common_keys(name, answer, by_job, unstable)
    null = RankCorrelation(name, answer, None, None, None, len(order), len(keys), level)
    if len(order) < MIN_JOBS:
        return replace(null, reason=f"{len(order)} job(s); τ needs at least {MIN_JOBS} configurations")
    if not keys:
        return replace(null, reason="no question measured by every job")
    m = np.array([[float(by_job[j][k].values[name] or 0.0) for k in keys] for j in order])
    a = np.array([[float(by_job[j][k].values[answer] or 0.0) for k in keys] for j in order])
    means = {j: (float(m[i].mean()), float(a[i].mean())) for i, j in enumerate(order)}
    tau, low, high, defined = tau_interval(m, a, level=level, resamples=resamples, seed=seed)
    if tau is None:
        const = [label for label, x in (("the retrieval metric", m), ("the answers", a)) if np.ptp(x.mean(axis=1)) == 0]
        return replace(null, means=means,
                       reason=f"undefined: {' and '.join(const) or 'a side'} did not differ between jobs")
    return replace(null, tau=tau, low=low, high=high, resamples=resamples, defined=defined, means=means)
