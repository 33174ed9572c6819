"""Agreement between a judge and human labels, each figure with its 95% interval: pure functions.

A judge verdict is an int on the rubric's scale or None (unparseable, or refused by the judge's server). None is
never dropped from agreement or kappa: it counts as a disagreement, so a judge that cannot answer half the time
cannot look good on the half it answered. `coverage` (parsed / total) and agreement among parsed verdicts stand
beside the headline as secondary figures.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from nomad_eval.metrics.aggregate import wilson

LEVEL = 0.95
Verdict = int | None


class FigureJson(TypedDict):
    """A Figure as calibration.json holds it."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str


@dataclass(frozen=True)
class Figure:
    """A point estimate, its 95% interval (None when undefined), the count it stands on and how it was made."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    method: str

    def as_dict(self) -> FigureJson:
        return FigureJson(value=self.value, low=self.low, high=self.high, n=self.n, method=self.method)


def proportion(successes: int, n: int) -> Figure:
    """A share with its Wilson interval, which stays inside [0, 1] and is sound at 0/n and n/n, unlike Wald's."""
    low, high = wilson(int(successes), n)
    return Figure(int(successes) / n if n else None, low, high, n, "wilson")


def agreement(human: Sequence[int], judge: Sequence[Verdict]) -> Figure:
    """Share of labels the judge matched; a None verdict is a miss."""
    return proportion(sum(h == j for h, j in zip(human, judge, strict=True)), len(human))


def agreement_parsed(human: Sequence[int], judge: Sequence[Verdict]) -> Figure:
    """The secondary figure: agreement over parsed verdicts only (what calibration used to report)."""
    pairs = [(h, j) for h, j in zip(human, judge, strict=True) if j is not None]
    return proportion(sum(h == j for h, j in pairs), len(pairs))


def coverage(judge: Sequence[Verdict]) -> Figure:
    return proportion(sum(j is not None for j in judge), len(judge))


def _coded(human: Sequence[int], judge: Sequence[Verdict]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Integer arrays, a None verdict coded as a category no human label uses: it can only disagree."""
    seen = [*human, *(j for j in judge if j is not None)]
    missing = min(seen, default=0) - 1
    return (np.asarray(human, dtype=np.int64),
            np.asarray([missing if j is None else j for j in judge], dtype=np.int64))


def _kappa(h: NDArray[np.int64], j: NDArray[np.int64], axis: int = -1) -> NDArray[np.float64]:
    """Unweighted Cohen's kappa along `axis`, NaN where chance agreement is 1 (kappa is undefined there).

    Vectorised over bootstrap resamples: sklearn's cohen_kappa_score (the reference it is tested against) costs
    ~2 ms a call, seconds for 2,000 resamples.
    """
    categories = np.union1d(np.unique(h), np.unique(j))
    po = np.mean(h == j, axis=axis)
    pe = sum(np.mean(h == c, axis=axis) * np.mean(j == c, axis=axis) for c in categories)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isclose(pe, 1.0), np.nan, (po - pe) / (1 - pe))


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _bootstrap(data: tuple[NDArray[Any], ...], statistic: Callable[..., Any], resamples: int, seed: int
               ) -> tuple[float | None, float | None]:
    """A seeded paired bootstrap interval: BCa, or percentile where BCa is undefined; None when neither is."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # Degenerate samples (every resample equal) show up as NaN endpoints, handled below.
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            res = stats.bootstrap(data, statistic, n_resamples=resamples, paired=True, vectorized=True,
                                  confidence_level=LEVEL, method=method, rng=np.random.default_rng(seed))
        low, high = _finite(res.confidence_interval.low), _finite(res.confidence_interval.high)
        if low is not None and high is not None:
            return low, high
    return None, None


def cohen_kappa(human: Sequence[int], judge: Sequence[Verdict]) -> float | None:
    """Kappa with a None verdict as a disagreement; None when undefined (both sides one and the same class)."""
    if not human:
        return None
    h, j = _coded(human, judge)
    return _finite(float(_kappa(h, j)))


def kappa_figure(human: Sequence[int], judge: Sequence[Verdict], resamples: int = 2000, seed: int = 0) -> Figure:
    value = cohen_kappa(human, judge)
    if value is None or len(human) < 2:
        return Figure(value, None, None, len(human), "bootstrap")
    low, high = _bootstrap(_coded(human, judge), _kappa, resamples, seed)
    return Figure(value, low, high, len(human), "bootstrap")


def _spearman(a: NDArray[np.float64], b: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
    # Spearman's rho is Pearson's r of average ranks; both scipy functions work along an axis, so one call
    # covers every bootstrap resample. Constant input gives NaN (undefined), with a warning the caller silences.
    return stats.pearsonr(stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis), axis=axis).statistic  # type: ignore[no-any-return]


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho; None when either side is constant or there are fewer than 3 pairs."""
    if len(a) < 3:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _finite(float(stats.spearmanr(a, b).statistic))


def spearman_figure(human: Sequence[int], judge: Sequence[Verdict], resamples: int = 2000, seed: int = 0
                    ) -> Figure:
    """Rank correlation over parsed verdicts (a None has no rank): its n is the parsed count, beside coverage."""
    pairs = [(h, j) for h, j in zip(human, judge, strict=True) if j is not None]
    a = np.asarray([h for h, _ in pairs], dtype=np.float64)
    b = np.asarray([j for _, j in pairs], dtype=np.float64)
    value = spearman(a.tolist(), b.tolist())
    if value is None:
        return Figure(None, None, None, len(pairs), "bootstrap")
    low, high = _bootstrap((a, b), _spearman, resamples, seed)
    return Figure(value, low, high, len(pairs), "bootstrap")


def flip_rate(repeated: Sequence[Sequence[Verdict]]) -> Figure:
    """Share of examples whose parsed verdicts differ across repeated judgements (of those with two or more)."""
    judged = [[v for v in row if v is not None] for row in repeated]
    judged = [row for row in judged if len(row) >= 2]
    return proportion(sum(len(set(row)) > 1 for row in judged), len(judged))


def mean_shift(before: Sequence[Verdict], after: Sequence[Verdict], top: int, resamples: int = 2000,
               seed: int = 0) -> Figure:
    """Mean of (after - before) / top over pairs where both verdicts parsed, on the 0-1 scale of judge means."""
    d = np.asarray([(a - b) / top for b, a in zip(before, after, strict=True) if a is not None and b is not None],
                   dtype=np.float64)
    if len(d) == 0:
        return Figure(None, None, None, 0, "bootstrap")
    value = float(d.mean()) + 0.0  # + 0.0: no "-0.0" in a report
    if np.ptp(d) == 0:  # every pair moved alike: no resample can differ
        return Figure(value, value, value, len(d), "bootstrap")
    low, high = _bootstrap((d,), np.mean, resamples, seed)
    return Figure(value, low, high, len(d), "bootstrap")
