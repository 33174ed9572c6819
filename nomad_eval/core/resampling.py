"""The resampling behind the statistics (core/stats.py): seeded draws kept per (n, resamples, seed), the bootstrap
distribution of a mean, BCa ends and quantiles, each computed in scipy's own steps so that every interval and
p-value is scipy's to the bit (tests/core/test_stats.py holds them equal), at a fraction of the cost: a sweep asks
for a hundred intervals and a dozen tests over the same questions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

Array = NDArray[np.float64]


def mean_along(x: Array, axis: int = -1) -> Array:
    return np.asarray(np.mean(x, axis=axis))


# Above this many questions a BCa interval of a mean takes its acceleration from the jackknife's closed form.
# scipy builds the n x (n - 1) jackknife matrix: 28-34 s and gigabytes for the 26 metrics of a 10k-question run.
BCA_JACKKNIFE_MAX = 1000


def bca_of_mean(values: Array, level: float, resamples: int, seed: int) -> tuple[float, float]:
    """scipy's BCa interval of the mean, from the same resamples, with the jackknife means in closed form.

    Leaving question i out gives the mean (S - x_i) / (n - 1), so the acceleration costs O(n). The rest follows
    scipy's own steps (Efron and Tibshirani eq. 14.14-14.15): the bias from the share of resampled means below the
    estimate, ties counted half, and the adjusted quantiles of the same bootstrap distribution. Equal to scipy's
    BCa up to rounding (tests/core/test_stats.py).
    """
    from scipy.special import ndtr, ndtri

    dist = bootstrap_means(values, resamples, seed)
    n, estimate = len(values), float(np.mean(values))
    z0 = ndtri((np.count_nonzero(dist < estimate) + np.count_nonzero(dist <= estimate)) / (2 * len(dist)))
    jack = (np.sum(values) - values) / (n - 1)
    u = (n - 1) * (np.mean(jack) - jack)
    accel = float(np.sum(u**3) / n**3 / (6 * (np.sum(u**2) / n**2) ** 1.5))
    z = ndtri((1 - level) / 2)
    low, high = (ndtr(z0 + (z0 + zz) / (1 - accel * (z0 + zz))) for zz in (z, -z))
    ends = quantiles(dist, np.asarray([low, high], dtype=np.float64))
    return float(ends[0]), float(ends[1])


# Draws for one (questions, resamples, seed) are the same for every metric of a run and every test of a sweep's
# ranking (each is seeded alike), so they are made once and kept while they are small: 2000 x 230 take 3.7 MB.
RESAMPLE_CACHE_MAX = 4_000_000
_draws: dict[tuple[str, int, int, int], Any] = {}


def kept_draws(kind: str, n: int, resamples: int, seed: int, make: Callable[[], Any]) -> Any:
    """`make()` for this kind of draw, kept (the 24 most recent) when n x resamples is small enough."""
    key = (kind, n, resamples, seed)
    if (found := _draws.get(key)) is not None:
        return found
    made = make()
    if n * resamples <= RESAMPLE_CACHE_MAX:
        if len(_draws) >= 24:
            _draws.pop(next(iter(_draws)))
        _draws[key] = made
    return made


def resample_indices(n: int, resamples: int, seed: int) -> NDArray[np.int64]:
    """The indices scipy's bootstrap draws for one sample of n from default_rng(seed)."""
    out: NDArray[np.int64] = kept_draws("indices", n, resamples, seed,
                                         lambda: np.random.default_rng(seed).integers(0, n, (resamples, n)))
    return out


def sign_flips(n: int, resamples: int, seed: int) -> NDArray[np.int8]:
    """The +1/-1 flips the seeded sign-flip test draws from default_rng(seed)."""
    out: NDArray[np.int8] = kept_draws(
        "signs", n, resamples, seed,
        lambda: np.random.default_rng(seed).integers(0, 2, size=(resamples, n), dtype=np.int8) * 2 - 1)
    return out


def resample_counts(n: int, resamples: int, seed: int) -> Array:
    """How often each question is drawn in each resample of `resample_indices` (resamples x n)."""
    def make() -> Array:
        idx = resample_indices(n, resamples, seed)
        flat = (idx + np.arange(resamples)[:, None] * n).ravel()
        return np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)

    out: Array = kept_draws("counts", n, resamples, seed, make)
    return out


def bootstrap_means(values: Array, resamples: int, seed: int) -> Array:
    """The bootstrap distribution of the mean as scipy computes it from `rng=default_rng(seed)`: the same indices
    and the same mean, so the intervals scipy derives from it are bit for bit those of drawing afresh
    (tests/core/test_stats.py), at half the cost.

    Values whose sums are exact (sums_exact: hit@k, a pass, recall over 1, 2 or 4 relevant documents, their deltas)
    take a matrix product with the resamples' draw counts instead of gathering every resample: each resample's sum
    is then exact in any order of addition, and divided by n as numpy's mean divides it, so the means are the same
    to the bit at a fifth of the cost. Any other value keeps numpy's own summation."""
    n = len(values)
    if n * resamples <= RESAMPLE_CACHE_MAX and sums_exact(values, n):
        return np.asarray(np.true_divide(resample_counts(n, resamples, seed) @ values, n))
    return mean_along(values[..., resample_indices(n, resamples, seed)])


def sums_exact(values: Array, terms: int) -> bool:
    """Whether every sum of `terms` of these values, each taken a whole number of times or with either sign, is
    exact in float64 whatever the order of addition: every value a whole multiple of 2**-k for some k <= 8 (0/1
    hits and passes, -1/0/1 deltas, recall over 2, 4 or 8 relevant documents) and the largest possible sum below
    2**52 such units. Such a sum then equals numpy's pairwise one to the bit, and so does its mean."""
    if not np.all(np.isfinite(values)):
        return False
    for k in range(9):
        scaled = values * 2.0**k  # exact: a power of two only moves the exponent
        if np.all(scaled == np.round(scaled)):
            return float(np.max(np.abs(scaled), initial=0.0)) * terms < 2.0**52
    return False


@lru_cache(maxsize=8)
def jackknife_indices(n: int) -> NDArray[np.intp]:
    """Row i: 0..n-1 without i (n x (n - 1)), as scipy's jackknife resamples them."""
    keep = ~np.eye(n, dtype=bool)
    out: NDArray[np.intp] = np.broadcast_to(np.arange(n), (n, n))[keep].reshape(n, n - 1)
    return out


def bca_from(values: Array, dist: Array, level: float) -> tuple[float, float]:
    """scipy's BCa interval of the mean (scipy.stats.bootstrap, method="BCa") from its bootstrap distribution
    `dist`, step for step with the same numpy operations, so the ends are scipy's to the bit
    (tests/core/test_stats.py compares them); without scipy's input checks and array-API layers, which cost 1 ms
    a call, as much as the rest. Efron and Tibshirani eq. 14.14-14.15: the bias from the share of resampled means
    below the estimate (ties counted half), the acceleration from the jackknife means, then the adjusted quantiles.
    NaN where they are undefined, as scipy's are."""
    from scipy.special import ndtr, ndtri

    n = len(values)
    estimate = np.mean(values)
    z0 = ndtri((np.count_nonzero(dist < estimate) + np.count_nonzero(dist <= estimate)).astype(np.float64)
               / (2 * len(dist)))
    # The jackknife as scipy builds it: row i is the sample without question i, in order, and its mean.
    jack = np.mean(values[jackknife_indices(n)], axis=-1)
    u = (float(n) - 1) * (np.mean(jack, keepdims=True) - jack)
    accel = 1 / 6 * (0 + np.sum(u**3) / float(n) ** 3) / (0 + np.sum(u**2) / float(n) ** 2) ** (3 / 2)
    z = float(ndtri((1 - level) / 2))
    ends = [ndtr(z0 + (z0 + zz) / (1 - accel * (z0 + zz))) for zz in (z, -z)]
    q = quantiles(dist, np.stack(ends, axis=-1))
    return float(q[0]), float(q[1])


def quantiles(dist: Array, p: Array) -> Array:
    """scipy.stats.quantile(dist, p) (its default method "linear", Hyndman and Fan's 7) of a one-dimensional `dist`,
    in scipy's own steps and arithmetic, so the same to the bit (tests/core/test_stats.py compares them); without
    its input checks and array-API layers, most of its ~0.7 ms a call. A p outside [0, 1] or NaN gives NaN, as
    scipy's; a `dist` holding NaN goes to scipy itself."""
    if dist.ndim != 1 or p.ndim != 1 or len(dist) == 0 or np.isnan(dist).any():
        out: Array = np.asarray(stats.quantile(dist, p), dtype=np.float64)
        return out
    y = np.sort(dist)
    n = np.asarray([float(len(y))])
    outside = (p > 1) | (p < 0) | np.isnan(p)
    p = np.where(outside, 0.5, p)
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    g[j < 0] = 0
    j, jp1 = np.clip(j, 0.0, n - 1), np.clip(jp1, 0.0, n - 1)
    res: Array = (1 - g) * y[j.astype(np.int64)] + g * y[jp1.astype(np.int64)]
    res[outside] = np.nan
    return res
