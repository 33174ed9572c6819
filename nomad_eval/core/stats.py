"""Statistics of the regression gate: intervals, paired tests, multiple comparisons and power.

One question is one observation, or one source document is when `clusters` is given: questions from the
same document move together, and treating them as independent makes intervals too narrow. Resampling is
seeded. Coverage, false-winner rate and planning accuracy are measured by bench/stats_sim.py.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

# scipy.stats is imported where a statistic is computed, not here: a module that only reads these types (the run
# browser among them) computes no statistic (tests/test_startup.py).

Array = NDArray[np.float64]
Alternative = Literal["two-sided", "worse_if_lower", "worse_if_higher"]
BootstrapMethod = Literal["auto", "BCa", "percentile", "basic", "studentized"]
Correction = Literal["holm", "fdr_bh"]

# scipy names the alternative by the sign of mean(current - base).
_SIDES = {"two-sided": "two-sided", "worse_if_lower": "less", "worse_if_higher": "greater"}
# Values scipy's bootstrap (and the sign-flip test) hold at once: the resampled rows x questions come in batches
# of about this many, so a large suite's resamples and BCa's n x (n - 1) jackknife stay small in memory.
BLOCK = 4_000_000


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


def _row_intervals(data: Array, how: BootstrapMethod, level: float, resamples: int, seed: int
                   ) -> tuple[Array, Array]:
    """scipy's bootstrap interval of the mean of each row of `data` (rows x questions), every row from the same
    resampled questions; a row whose `how` interval is undefined (BCa of a sample whose bias or acceleration
    cannot be estimated) takes the percentile interval of the same resamples."""
    from scipy import stats

    common = dict(axis=-1, vectorized=True, confidence_level=level, batch=max(1, BLOCK // data.size))
    with warnings.catch_warnings():
        # Degenerate samples show up as NaN ends, handled below.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap((data,), np.mean, method=how, n_resamples=resamples, rng=np.random.default_rng(seed),
                              **common)
        low, high = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
        bad = ~(np.isfinite(low) & np.isfinite(high))
        if bad.any():
            pct = stats.bootstrap((data,), np.mean, method="percentile", n_resamples=0, bootstrap_result=res,
                                  **common).confidence_interval
            low, high = np.where(bad, pct.low, low), np.where(bad, pct.high, high)
    return low, high


def mean_intervals(rows: Sequence[Sequence[float] | Array], *, level: float = 0.95, resamples: int = 2000, seed: int = 0
                   ) -> list[Interval | None]:
    """BCa intervals of the mean of each row (rows x questions, every row over the same questions), resampling the
    questions jointly for all rows in one scipy call: row by row, the intervals mean_interval gives each alone."""
    data = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    if data.shape[1] < 2:
        return [None] * len(data)
    out: list[Interval | None] = [Interval(float(r[0]) + 0.0, float(r[0]) + 0.0, level) for r in data]
    # All values equal: the zero-width interval, which BCa cannot give (+ 0.0 turns -0.0 into 0.0, so identical
    # runs compare equal to Interval(0.0, 0.0)).
    varied = np.flatnonzero(np.ptp(data, axis=1) > 0)
    if len(varied):
        low, high = _row_intervals(data[varied], "BCa", level, resamples, seed)
        for i, lo, hi in zip(varied, low, high, strict=True):
            out[i] = Interval(float(lo), float(hi), level)
    return out


def _interval(
    values: Array, clusters: Sequence[str] | None, level: float, resamples: int, seed: int, method: BootstrapMethod
) -> Interval | None:
    if clusters is None and method in ("auto", "BCa"):
        return mean_intervals([values], level=level, resamples=resamples, seed=seed)[0]
    sums, counts = (values, np.ones_like(values)) if clusters is None else _cluster_sums(values, clusters)
    if len(sums) < 2:
        return None
    if np.ptp(values) == 0:
        v = float(values[0]) + 0.0
        return Interval(v, v, level)
    if clusters is None and method != "studentized":
        lows, highs = _row_intervals(values[None], method, level, resamples, seed)
        return Interval(float(lows[0]), float(highs[0]), level)

    from scipy import stats

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
            # paired=True resamples cluster indices, which keeps each cluster's sum with its count.
            res = stats.bootstrap((sums, counts), _ratio, confidence_level=level, method=how,
                                  **common)
        return float(res.confidence_interval.low), float(res.confidence_interval.high)

    # Measured in bench/stats_sim.py: BCa covers 95% over 200 questions, but over 40 documents of unequal
    # size it and the percentile interval undercover (~91-92%); bootstrap-t holds up best there.
    how: BootstrapMethod = "studentized" if method == "auto" else method
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


def sign_flip_p_value(deltas: Array, side: str, resamples: int, seed: int) -> float:
    """p-value of the sign-flip randomisation test of mean(deltas) = 0 against `side` ("two-sided", "less",
    "greater"): under the null each delta is as likely negative as positive. Every sign pattern when there are
    at most `resamples` of them (the exact p), else `resamples` patterns drawn from default_rng(seed), counted
    with the observed one ((hits + 1) / (resamples + 1)), so a drawn p is never 0."""
    return sign_flip_p_values(np.asarray(deltas, dtype=np.float64)[None], side, resamples, seed)[0]


def sign_flip_p_values(deltas: Array, side: str, resamples: int, seed: int) -> list[float]:
    """sign_flip_p_value of each row of `deltas` (rows x pairs), every row tested with the same sign patterns:
    the ones default_rng(seed) draws for each row alone, drawn once."""
    k, n = deltas.shape
    exact = 2**n <= resamples
    rng = np.random.default_rng(seed)
    rows = 2**n if exact else resamples
    observed = np.sum(deltas, axis=1) / n
    # Flipped means that differ from the observed one only by rounding count as equal to it.
    tol = 1e-9 * np.sum(np.abs(deltas), axis=1) / n
    below, above = np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64)
    step = max(1, BLOCK // n)
    for start in range(0, rows, step):
        count = min(step, rows - start)
        if exact:  # pattern k flips delta j when bit j of k is set
            signs = 1.0 - 2.0 * ((np.arange(start, start + count)[:, None] >> np.arange(n)) & 1)
        else:
            signs = rng.choice([-1.0, 1.0], size=(count, n))
        flipped = signs @ deltas.T / n
        below += np.count_nonzero(flipped <= observed + tol, axis=0)
        above += np.count_nonzero(flipped >= observed - tol, axis=0)
    extra = 0 if exact else 1
    out = []
    for lo, hi in zip(below, above, strict=True):
        less, greater = (int(lo) + extra) / (rows + extra), (int(hi) + extra) / (rows + extra)
        out.append(min(1.0, {"less": less, "greater": greater}.get(side, 2 * min(less, greater))))
    return out


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

    binary (every value 0 or 1): exact McNemar test, a binomial test of the discordant pairs. Otherwise the
    sign-flip randomisation test of the mean delta (sign_flip_p_value). With `clusters` the sign-flip test runs
    on per-cluster delta sums whatever `binary` says, because McNemar assumes independent questions.
    "worse_if_lower": the alternative is that current is lower than base; "worse_if_higher" the opposite.
    1.0 when no pair differs.
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
        from scipy import stats

        return float(stats.binomtest(wins, discordant, 0.5, alternative=side).pvalue)
    data = deltas if clusters is None else _cluster_sums(deltas, clusters)[0]
    return sign_flip_p_value(data, side, resamples, seed)


def paired_p_values(
    base: Sequence[float],
    currents: Sequence[Sequence[float]],
    *,
    binary: bool,
    alternative: Alternative = "two-sided",
    clusters: Sequence[str] | None = None,
    resamples: int = 10000,
    seed: int = 0,
) -> list[float]:
    """paired_p_value of each of `currents` against `base`. Their sign-flip tests share one draw of the sign
    patterns, the draw each would make alone (one seed), instead of drawing it once per configuration."""
    out: dict[int, float] = {}
    flip: list[tuple[int, Array]] = []
    for i, current in enumerate(currents):
        deltas = _deltas(base, current)
        if (binary and clusters is None) or not np.any(deltas):
            out[i] = paired_p_value(base, current, binary=binary, alternative=alternative, clusters=clusters,
                                    resamples=resamples, seed=seed)
        else:
            flip.append((i, deltas if clusters is None else _cluster_sums(deltas, clusters)[0]))
    if flip:
        ps = sign_flip_p_values(np.asarray([d for _, d in flip]), _SIDES[alternative], resamples, seed)
        out |= {i: p for (i, _), p in zip(flip, ps, strict=True)}
    return [out[i] for i in range(len(currents))]


def adjust(p_values: Sequence[float], method: Correction = "holm") -> list[float]:
    """p-values adjusted for testing them all at once (Holm: family-wise error; fdr_bh: false discovery rate).

    Holm's step-down is written here rather than taken from statsmodels' multipletests, which runs a full garbage
    collection on every call: a sweep's ranking corrects once per metric, and those collections were most of the
    time a sweep spends after its last job. tests/core/test_stats.py holds both corrections equal to statsmodels'."""
    if len(p_values) == 0:
        return []
    p = np.asarray(p_values, dtype=np.float64)
    if method == "fdr_bh":
        from scipy import stats

        return [float(q) for q in stats.false_discovery_control(p, method="bh")]
    # The i-th smallest p is scaled by the m - i hypotheses still in play, made non-decreasing, capped at 1.
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
