"""Intervals for the judge means of a generation report.

A judge mean is a mean over cases, and the repeats of one question share most of their answer, so they are not
independent draws: the interval resamples whole questions (a cluster bootstrap, `stats.mean_interval` with the
question as the cluster), which keeps the statistic the case mean the report prints. The probability-weighted
mean (graded rubrics, token logprobs) gets its own interval the same way. n is given both as cases and as
questions, because the interval's width follows the questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nomad_eval.base.case import Case
from nomad_eval.core.stats import mean_interval
from nomad_eval.metrics.registry import MetricName


def _interval(values: list[float], questions: list[str], resamples: int, seed: int) -> dict[str, Any]:
    iv = mean_interval(values, questions, resamples=resamples, seed=seed) if len(set(questions)) >= 2 else None
    return {"low": None if iv is None else iv.low, "high": None if iv is None else iv.high,
            "questions": len(set(questions))}


def add_judge_intervals(section: dict[str, dict[str, Any]], cases: Sequence[Case],
                        scale_max: Mapping[str, int], resamples: int, seed: int) -> None:
    """Write `low`, `high` and `questions` (and `low_weighted`, `high_weighted`) into each `<mode>.<rubric>` entry
    of a judge section, from the parsed verdicts in the cases; None bounds with fewer than two questions judged."""
    for key, entry in section.items():
        parsed = MetricName.parse(key)
        mode, name = parsed.mode, parsed.family
        top = scale_max[name]
        plain: tuple[list[float], list[str]] = ([], [])
        weighted: tuple[list[float], list[str]] = ([], [])
        for c in cases:
            if c["mode"] != mode:
                continue
            v = (c.get("judges") or {}).get(name)
            if v is not None:
                plain[0].append(v / top)
                plain[1].append(str(c["id"]))
            w = (c.get("judges_weighted") or {}).get(name)
            if w is not None:
                weighted[0].append(w / top)
                weighted[1].append(str(c["id"]))
        if len(plain[0]) != entry.get("n"):
            raise ValueError(f"judge section {key}: {entry.get('n')} values but {len(plain[0])} parsed verdicts in "
                             "the cases")
        entry.update(_interval(*plain, resamples, seed))
        if "mean_weighted" in entry:
            w_iv = _interval(*weighted, resamples, seed)
            entry.update({"low_weighted": w_iv["low"], "high_weighted": w_iv["high"]})
