"""The change the gate's question-sampling test finds at 80% power: compare's "detectable" column and tier=plan's
figure, one function for both (bench/plan_sim.py checks it against simulated compares)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nomad_eval.core.stats import minimum_detectable_effect, planning_sd

ALPHA = 0.05
POWER = 0.8


def detectable_change(values: Sequence[float], gated: int, correlation: float, binary: bool = False
                      ) -> float | None:
    """The smallest true change in general the compare's question-sampling test finds at 80% power: one-sided,
    at the level Holm gives the first of `gated` metrics (alpha / gated), with the spread a paired delta has when a
    question's value correlates `correlation` between two runs. tier=plan prints the same figure.

    `binary` (0/1 values): the test is then the exact McNemar (sign) test, whose power is worked out exactly (the
    normal approximation overstates it when few pairs are discordant); otherwise the paired t-test's power. A 0/1
    metric at 0 or 1 on every question has no spread to plan from, yet a change is not free to see: its rate is
    taken as (hits + 1/2) / (n + 1), the spread a suite of this size cannot tell from none."""
    n = len(values)
    sd = planning_sd(values, correlation)
    if n > 1 and sd == 0 and set(values) <= {0.0, 1.0}:
        rate = (sum(values) + 0.5) / (n + 1)
        sd = math.sqrt(rate * (1 - rate) * n / (n - 1)) * math.sqrt(2 * (1 - correlation))
    alpha = ALPHA / max(1, gated)
    if binary and n > 1 and math.isfinite(sd):
        return mcnemar_detectable(n, sd, alpha)
    return minimum_detectable_effect(sd, n, alpha=alpha, power=POWER)


def mostly_zero_one(values: Sequence[float]) -> bool:
    """Values essentially 0 or 1 (19 in 20 at least): the paired deltas are then essentially -1, 0 or 1, and the
    exact sign test's power, not the t-test's, is what the question-sampling test has (one recall@5 of 0.5 among
    219 sent the detectable change to the normal formula, a third below what the test reaches)."""
    return bool(values) and sum(v in (0.0, 1.0) for v in values) >= 0.95 * len(values)


def mcnemar_power(n: int, sd: float, effect: float, alpha: float) -> float:
    """Power of the one-sided exact McNemar test over n pairs whose 0/1 deltas have mean -effect and spread sd:
    a pair is discordant with probability sd² + effect² (at least the effect: a drop of that size needs that many
    losses however small the planned spread), and a discordant pair is a loss with probability
    (discordant + effect) / (2 discordant)."""
    from scipy import stats

    discordant = min(1.0, max(sd ** 2 + effect ** 2, effect))
    loss = min(1.0, (discordant + effect) / (2 * discordant))
    d = np.arange(n + 1)
    critical = stats.binom.isf(alpha, d, 0.5) + 1  # fewest losses of d whose one-sided p is at most alpha
    return float(np.sum(stats.binom.pmf(d, n, discordant) * stats.binom.sf(critical - 1, d, loss)))


def mcnemar_detectable(n: int, sd: float, alpha: float) -> float | None:
    lo, hi = 0.0, 1.0
    if mcnemar_power(n, sd, hi, alpha) < POWER:
        return None
    for _ in range(40):  # bisection to well below the 4 decimals any report prints
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mcnemar_power(n, sd, mid, alpha) < POWER else (lo, mid)
    return hi
