"""Paired bootstrap confidence interval of a metric's mean delta between two runs of the same questions."""

from __future__ import annotations

import random
from collections.abc import Sequence


def paired_bootstrap_ci(
    baseline: Sequence[float], current: Sequence[float], resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile interval of mean(current - baseline) over questions resampled with replacement.

    Pairs must be aligned (same question at the same index). None when there are fewer than two pairs.
    """
    if len(baseline) != len(current):
        raise ValueError("paired bootstrap needs aligned pairs")
    n = len(baseline)
    if n < 2:
        return None
    deltas = [c - b for b, c in zip(baseline, current, strict=True)]
    rng = random.Random(seed)
    means = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    lo = means[int((1 - level) / 2 * (resamples - 1))]
    hi = means[int((1 + level) / 2 * (resamples - 1))]
    return lo, hi
