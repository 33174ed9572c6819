"""Headline numbers with their uncertainty, as the report stores them: means plus n and a 95% interval each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nomad_eval.core.questions import Question
from nomad_eval.core.summary import summarize
from nomad_eval.report.schema import MetricInterval


def summarize_report(questions: Sequence[Question], names: Iterable[str], cfg: Any
                     ) -> tuple[dict[str, float | None], dict[str, MetricInterval]]:
    """`cfg.stats` picks clustering by source document and the resample count; `cfg.seed` seeds the bootstrap
    so a re-run prints the same interval."""
    summary = summarize(questions, list(names), cluster=bool(cfg.stats.cluster), seed=int(cfg.seed),
                        resamples=int(cfg.stats.resamples))
    metrics = {k: s.mean for k, s in summary.items()}
    intervals = {k: MetricInterval(n=s.n, low=s.low, high=s.high, clusters=s.clusters)
                 for k, s in summary.items() if s.mean is not None}
    return metrics, intervals


def tag_intervals(questions: Sequence[Question], names: Iterable[str], cfg: Any
                  ) -> dict[str, dict[str, MetricInterval]]:
    """Each tag's n and 95% interval of `names`, over that tag's questions, made as the run's own are."""
    names = list(names)
    tags = sorted({t for q in questions for t in q.tags})
    return {t: summarize_report([q for q in questions if t in q.tags], names, cfg)[1] for t in tags}
