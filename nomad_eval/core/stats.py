"""Statistics of the regression gate: intervals, paired tests, multiple comparisons and power.

One question is one observation, or one source document is when `clusters` is given: questions from the
same document move together, and treating them as independent makes intervals too narrow. Resampling is
seeded. Coverage, false-winner rate and planning accuracy are measured by bench/stats_sim.py.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Literal

import numpy as np
from scipy import stats

from nomad_eval.base.kept import Kept
from nomad_eval.core.resampling import (
    BCA_JACKKNIFE_MAX,
    RESAMPLE_CACHE_MAX,
    Array,
    bca_from,
    bca_of_mean,
    bootstrap_means,
    kept_draws,
    mean_along,
    sign_flips,
    sums_exact,
)

Alternative = Literal["two-sided", "worse_if_lower", "worse_if_higher"]
BootstrapMethod = Literal["auto", "BCa", "percentile", "basic", "studentized"]
Correction = Literal["holm", "fdr_bh"]

# scipy names the alternative by the sign of mean(current - base).
_SIDES = {"two-sided": "two-sided", "worse_if_lower": "less", "worse_if_higher": "greater"}


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    level: float = 0.95

    @property
    def width(self) -> float:
        return self.high - self.low


def _ratio(sums: Array, counts: Array, axis: int = -1) -> Array:
    return np.asarray(np.sum(sums, axis=axis) / np.sum(counts, axis=axis))


def _ratio_se(sums: Array, counts: Array, axis: int = -1) -> Array:
    # Linearised standard error of sum/count over g clusters, with the usual g/(g-1) small-sample factor.
    g = sums.shape[axis]
    total = np.sum(counts, axis=axis, keepdims=True)
    r = np.sum(sums, axis=axis, keepdims=True) / total
    return np.asarray(np.sqrt(g / (g - 1) * np.sum((sums - r * counts) ** 2, axis=axis)) / np.squeeze(total, axis))


def _cluster_sums(values: Array, clusters: Sequence[str]) -> tuple[Array, Array]:
    if len(clusters) != len(values):
        raise ValueError(f"{len(clusters)} cluster labels for {len(values)} values")
    _, index = np.unique(np.asarray(clusters, dtype=object), return_inverse=True)
    return np.bincount(index, weights=values).astype(np.float64), np.bincount(index).astype(np.float64)


# Intervals already computed in this process, by their exact inputs: in a sweep most metrics of most jobs have the
# same per-question values as another metric or job (130 arrays, 73 distinct in a 5-point threshold sweep), and an
# interval is a pure function of them.
_interval_memo: Kept[Interval | None] = Kept(512)


def _interval(
    values: Array, clusters: Sequence[str] | None, level: float, resamples: int, seed: int, method: BootstrapMethod
) -> Interval | None:
    if len(values) > 10_000:  # large suites are rare and their keys large: computed afresh
        return _interval_of(values, clusters, level, resamples, seed, method)
    key = (values.tobytes(), None if clusters is None else tuple(clusters), level, resamples, seed, method)
    return _interval_memo.get(key, lambda: _interval_of(values, clusters, level, resamples, seed, method))


def _interval_of(
    values: Array, clusters: Sequence[str] | None, level: float, resamples: int, seed: int, method: BootstrapMethod
) -> Interval | None:
    sums, counts = (values, np.ones_like(values)) if clusters is None else _cluster_sums(values, clusters)
    if len(sums) < 2:
        return None
    if np.ptp(values) == 0:
        # + 0.0 turns a -0.0 into 0.0 so identical runs compare equal to Interval(0.0, 0.0).
        v = float(values[0]) + 0.0
        return Interval(v, v, level)

    def run(how: BootstrapMethod) -> tuple[float, float]:
        common = dict(n_resamples=resamples, vectorized=True, paired=True, rng=np.random.default_rng(seed))
        with warnings.catch_warnings():
            # Degenerate resamples show up as NaN or inf endpoints, handled by the caller.
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            if how == "studentized":
                # Bootstrap-t: the resampled t-statistics' quantiles, scaled by this sample's standard error.
                est, se = float(_ratio(sums, counts)), float(_ratio_se(sums, counts))
                t = stats.bootstrap(
                    (sums, counts),
                    lambda s, c, axis=-1: (_ratio(s, c, axis) - est) / _ratio_se(s, c, axis),
                    method="percentile",  # only the distribution is used; this skips BCa's jackknife
                    **common,
                ).bootstrap_distribution
                t_low, t_high = np.quantile(t, [(1 - level) / 2, (1 + level) / 2])
                return float(est - t_high * se), float(est - t_low * se)
            if how == "BCa" and clusters is None and len(values) > BCA_JACKKNIFE_MAX:
                return bca_of_mean(values, level, resamples, seed)
            if clusters is None and how == "BCa":
                return bca_from(values, bootstrap_means(values, resamples, seed), level)
            if clusters is None:
                # scipy is handed the distribution (n_resamples=0) and derives the interval from it as usual.
                res = stats.bootstrap((values,), mean_along, confidence_level=level, method=how,
                                      **{**common, "paired": False, "n_resamples": 0,
                                         "bootstrap_result": SimpleNamespace(
                                             bootstrap_distribution=bootstrap_means(values, resamples, seed))})
            else:  # paired=True resamples cluster indices, which keeps each cluster's sum with its count
                res = stats.bootstrap((sums, counts), _ratio, confidence_level=level, method=how, **common)
        return float(res.confidence_interval.low), float(res.confidence_interval.high)

    # Measured in bench/stats_sim.py: BCa covers 95% over 200 questions, but over 40 documents of unequal
    # size it and the percentile interval undercover (~91-92%); bootstrap-t holds up best there.
    how: BootstrapMethod = ("BCa" if clusters is None else "studentized") if method == "auto" else method
    for attempt in dict.fromkeys([how, "BCa", "percentile"]):
        # Bootstrap-t and BCa are undefined when the standard error or the bias and acceleration cannot be
        # estimated (e.g. almost every resample equals the observed statistic); percentile always is.
        low, high = run(attempt)
        if math.isfinite(low) and math.isfinite(high):
            break
    return Interval(low, high, level)


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[str] | None = None,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    method: BootstrapMethod = "auto",
) -> Interval | None:
    """Bootstrap interval of the mean of per-question values.

    Resamples whole questions, or whole clusters when `clusters` is given (clusters[i] is question i's source
    document; the statistic is then sum of values / number of questions over the resampled clusters). None
    with fewer than two questions or two clusters; all values equal gives the zero-width Interval(v, v).
    method "auto": BCa over questions, bootstrap-t ("studentized") over clusters, the methods whose coverage
    bench/stats_sim.py measured best; an undefined interval falls back to BCa, then percentile.
    """
    return _interval(np.asarray(values, dtype=np.float64), clusters, level, resamples, seed, method)


def _deltas(base: Sequence[float], current: Sequence[float]) -> Array:
    if len(base) != len(current):
        raise ValueError(f"paired statistics need aligned pairs: {len(base)} base vs {len(current)} current values")
    return np.asarray(current, dtype=np.float64) - np.asarray(base, dtype=np.float64)


def paired_interval(
    base: Sequence[float],
    current: Sequence[float],
    clusters: Sequence[str] | None = None,
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    method: BootstrapMethod = "auto",
) -> Interval | None:
    """Bootstrap interval of mean(current - base) over aligned pairs (same question at the same index).

    ValueError when the lengths differ. Identical inputs give Interval(0.0, 0.0) exactly.
    """
    return _interval(_deltas(base, current), clusters, level, resamples, seed, method)


def paired_p_value(
    base: Sequence[float],
    current: Sequence[float],
    *,
    binary: bool,
    alternative: Alternative = "two-sided",
    clusters: Sequence[str] | None = None,
    resamples: int = 10000,
    seed: int = 0,
) -> float:
    """p-value of a paired test of "no difference between base and current".

    binary (every value 0 or 1): exact McNemar test, a binomial test of the discordant pairs. Otherwise a
    sign-flip randomisation test of the mean delta: exact enumeration with scipy's permutation_test when
    2**n <= resamples, else `resamples` seeded random sign flips through scipy's monte_carlo_test. With
    `clusters` the sign-flip test runs on per-cluster delta sums whatever `binary` says, because McNemar
    assumes independent questions. "worse_if_lower": the alternative is that current is lower than base;
    "worse_if_higher" the opposite. 1.0 when no pair differs.
    """
    deltas = _deltas(base, current)
    if not np.any(deltas):
        return 1.0
    side = _SIDES[alternative]
    if binary and clusters is None:
        both = np.concatenate([np.asarray(base, dtype=np.float64), np.asarray(current, dtype=np.float64)])
        if not np.all((both == 0) | (both == 1)):
            raise ValueError("binary=True needs every value to be 0 or 1")
        # Under the null each discordant pair is a win or a loss with probability 1/2.
        wins, discordant = int(np.sum(deltas > 0)), int(np.sum(deltas != 0))
        return float(stats.binomtest(wins, discordant, 0.5, alternative=side).pvalue)
    data = deltas if clusters is None else _cluster_sums(deltas, clusters)[0]
    if len(data) < 2:
        # One pair (or cluster) has two sign patterns, which scipy will not enumerate: the observed one is as
        # extreme as the other, so p is 1 two-sided, and 1/2 or 1 one-sided by the delta's direction.
        if side == "two-sided":
            return 1.0
        return 0.5 if (data[0] > 0) == (side == "greater") else 1.0
    if 2 ** len(data) <= resamples:
        # Few enough sign patterns to enumerate: permutation_test then gives the exact p-value.
        exact = stats.permutation_test(
            (data,), mean_along, permutation_type="samples", vectorized=True, n_resamples=resamples, alternative=side
        )
        return min(1.0, float(exact.pvalue))
    # The same sign-flip null drawn directly: permutation_test's generic pairing machinery costs ~0.2 s
    # at n=230 and 10,000 resamples, this ~10 ms, with the same (hits + 1) / (resamples + 1) p-value.
    n = len(data)
    if n * resamples <= RESAMPLE_CACHE_MAX and sums_exact(data, n):
        # Each flipped mean as one product with the +1/-1 matrix, the same means to the bit (sums_exact), without
        # making the resamples x n matrix of flipped deltas. scipy is handed a sample of ones and the flips as its
        # resamples, so its statistic x @ data / n is the observed mean on the ones and each flipped mean on a row.
        flips = kept_draws("signs-f", n, resamples, seed, lambda: sign_flips(n, resamples, seed).astype(np.float64))
        res = stats.monte_carlo_test(
            np.ones(n), lambda size: flips[: size[0]], lambda x, axis=-1: np.true_divide(x @ data, n),
            vectorized=True, n_resamples=resamples, alternative=side)
        return min(1.0, float(res.pvalue))
    signs = sign_flips(n, resamples, seed)
    drawn = [0]

    def flipped(size: tuple[int, ...]) -> Array:
        # scipy asks for the resamples in batches, in order: each batch takes the next rows of the same flips.
        start, drawn[0] = drawn[0], drawn[0] + size[0]
        return data * signs[start: start + size[0]]

    # Batches of 500 keep each flipped block in cache: a row's mean is the same whatever the batch (numpy sums each
    # row on its own), at less than half the time of one 10,000-row block.
    res = stats.monte_carlo_test(data, flipped, mean_along, vectorized=True, n_resamples=resamples, batch=500,
                                 alternative=side)
    return min(1.0, float(res.pvalue))


def adjust(p_values: Sequence[float], method: Correction = "holm") -> list[float]:
    """p-values adjusted for testing them all at once (Holm: family-wise error; fdr_bh: false discovery rate)."""
    if len(p_values) == 0:
        return []
    p = np.asarray(p_values, dtype=np.float64)
    if method == "fdr_bh":
        return [float(q) for q in stats.false_discovery_control(p, method="bh")]
    # Holm's step-down, written here because statsmodels' multipletests costs ~0.45 s of imports (pandas) at the
    # end of every sweep; tests/core/test_stats.py holds it equal to multipletests(method="holm"). The i-th
    # smallest p is scaled by the m - i hypotheses still in play, made monotone, and capped at 1.
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    out = np.empty_like(p)
    out[order] = scaled
    return [float(q) for q in out]


def minimum_detectable_effect(
    sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8, one_sided: bool = True
) -> float | None:
    """Smallest true mean paired delta detected with probability `power` by a level-`alpha` paired test.

    `sd` is the sd of the per-question deltas, n the number of questions (or clusters, with cluster-level
    sd). Uses the paired t-test's power, which the sign-flip and McNemar tests match closely at n in the
    hundreds (measured in bench/stats_sim.py). 0.0 when sd is 0; None when n < 2 or sd is not finite.
    """
    if n < 2 or not math.isfinite(sd):
        return None
    if sd == 0:
        return 0.0
    from statsmodels.stats.power import TTestPower

    d = TTestPower().solve_power(
        effect_size=None, nobs=n, alpha=alpha, power=power, alternative="larger" if one_sided else "two-sided"
    )
    return float(np.asarray(d).item()) * sd


def questions_needed(
    effect: float, sd: float, *, alpha: float = 0.05, power: float = 0.8, one_sided: bool = True
) -> int | None:
    """Fewest questions whose minimum detectable effect is at most `effect` (2 when sd is 0; None if effect <= 0)."""
    if effect <= 0 or not math.isfinite(sd):
        return None
    if sd == 0:
        return 2

    def mde(n: int) -> float:
        return minimum_detectable_effect(sd, n, alpha=alpha, power=power, one_sided=one_sided) or 0.0

    if mde(2) <= effect:
        return 2
    from statsmodels.stats.power import TTestPower

    n = TTestPower().solve_power(
        effect_size=effect / sd, nobs=None, alpha=alpha, power=power, alternative="larger" if one_sided else "two-sided"
    )
    needed = max(2, math.ceil(float(np.asarray(n).item())))
    # The root finder's tolerance can leave ceil() one short or one over; settle it against the definition.
    while mde(needed) > effect:
        needed += 1
    while needed > 2 and mde(needed - 1) <= effect:
        needed -= 1
    return needed


def planning_sd(values: Sequence[float], correlation: float = 0.5) -> float:
    """Per-question delta sd assumed when planning from ONE run's per-question values.

    Assumes a future run's per-question values have the same spread as this one's and correlate with them
    `correlation` across questions, so sd_delta = sd(values, ddof=1) * sqrt(2 * (1 - correlation)). 0.5 is a
    cautious default: two configurations of one pipeline usually agree more, and a higher correlation gives a
    smaller sd and a smaller MDE. With a measured delta sd from two real runs, use that instead. NaN for fewer
    than two values (no sample sd), which minimum_detectable_effect turns into None.
    """
    if len(values) < 2:
        return math.nan
    return float(np.std(np.asarray(values, dtype=np.float64), ddof=1)) * math.sqrt(2 * (1 - correlation))


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
    raw = [paired_p_value(reference, configs[name], binary=binary, clusters=clusters, seed=seed) for name in names]
    ranked = [
        Ranked(
            name=name,
            delta=float(np.mean(_deltas(reference, configs[name]))) if len(reference) else 0.0,
            interval=paired_interval(reference, configs[name], clusters, seed=seed),
            p_value=p,
            p_adjusted=q,
            real=q < alpha,
        )
        for name, p, q in zip(names, raw, adjust(raw, method), strict=True)
    ]
    return sorted(ranked, key=lambda r: r.delta, reverse=True)
