"""Headline numbers with their uncertainty, as the report stores them: means plus n and a 95% interval each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nomad_eval.core.questions import Question
from nomad_eval.core.summary import summarize
from nomad_eval.report.schema import MetricInterval


@dataclass(frozen=True)
class Bootstrap:
    """How every interval is resampled: by question or by source document (stats.cluster), how often
    (stats.resamples), and seeded (`seed`) so a re-run prints the same interval."""

    cluster: bool
    seed: int
    resamples: int


def summarize_report(questions: Sequence[Question], names: Iterable[str], boot: Bootstrap
                     ) -> tuple[dict[str, float | None], dict[str, MetricInterval]]:
    summary = summarize(questions, list(names), cluster=boot.cluster, seed=boot.seed, resamples=boot.resamples)
    metrics = {k: s.mean for k, s in summary.items()}
    intervals = {k: MetricInterval(n=s.n, low=s.low, high=s.high, clusters=s.clusters)
                 for k, s in summary.items() if s.mean is not None}
    return metrics, intervals


def tag_intervals(questions: Sequence[Question], names: Iterable[str], boot: Bootstrap
                  ) -> dict[str, dict[str, MetricInterval]]:
    """Each tag's n and 95% interval of `names`, over that tag's questions, made as the run's own are."""
    names = list(names)
    tags = sorted({t for q in questions for t in q.tags})
    return {t: summarize_report([q for q in questions if t in q.tags], names, boot)[1] for t in tags}
