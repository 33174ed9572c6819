"""A sweep's configurations ranked against its reference job: paired deltas with their intervals and p-values,
corrected for testing every configuration at once (core/stats.py holds the tests themselves)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nomad_eval.core.stats import Correction, Interval, adjust, mean_intervals, paired_interval, paired_p_values


@dataclass(frozen=True)
class Ranked:
    name: str
    delta: float  # mean(config - reference), in the metric's own units
    interval: Interval | None
    p_value: float  # two-sided paired test against the reference
    p_adjusted: float  # after the correction across all configurations
    real: bool  # p_adjusted < alpha


def rank_against_reference(
    reference: Sequence[float],
    configs: Mapping[str, Sequence[float]],
    *,
    binary: bool,
    method: Correction = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> list[Ranked]:
    """Each configuration's paired delta against the reference, best first (higher is better; negate a
    lower-is-better metric first). The correction is what keeps a 20-way sweep from crowning a chance winner.
    """
    names = list(configs)
    raw = paired_p_values(reference, [configs[name] for name in names], binary=binary, clusters=clusters, seed=seed)
    deltas = [np.asarray(configs[name], dtype=np.float64) - np.asarray(reference, dtype=np.float64)
              for name in names]
    # Without clusters, every configuration's delta in one bootstrap of the shared questions.
    intervals = (mean_intervals(deltas, seed=seed) if clusters is None else
                 [paired_interval(reference, configs[name], clusters, seed=seed) for name in names])
    ranked = [Ranked(name, float(np.mean(d)) if len(reference) else 0.0, iv, p, q, q < alpha)
              for name, d, iv, p, q in zip(names, deltas, intervals, raw, adjust(raw, method), strict=True)]
    return sorted(ranked, key=lambda r: r.delta, reverse=True)
