"""A judge's mean corrected by a few human labels: prediction-powered inference (PPI).

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382 (2023). The judge
scores every case of a run; a person labels a uniformly random few. The estimate of the mean human label is

    mean of the judge over the unlabelled units + mean of (human - judge) over the labelled units

and its 95% interval adds both terms' variances. The second term (the "rectifier") measures the judge's bias on
the very answers of this run, so a biased or weak judge still gives a valid interval: weakness only widens it.
The arithmetic is ppi-python's (`ppi_py.ppi_mean_ci`), not a copy of it; tests/core/test_ppi.py checks equality.
Each choice below is checked by bench/ppi_sim.py (docs/benchmarks.md gives the coverage it measures):

- Classic PPI (`lam=1`), not PPI++'s power tuning (`power_tuning=True`, ppi_mean_ci's default `lam=None`): classic
  PPI is the estimator whose coverage the paper proves, while the tuned `lam` is estimated from the same few labels
  it is then applied to, which the interval does not account for.
- Labelled and unlabelled units are disjoint (the paper's and ppi_mean_ci's independent-samples setting).
- The unit is the question when `groups` names each case's question: repeats of one question share most of their
  answer, so they are not independent. A question's judge score is the mean over its cases; a labelled question
  contributes the mean of (human - judge) over its labelled cases only, pairing each label with its own verdict.
- A null verdict (unparseable, or refused by the judge's server) is scored as the middle of the scale (0.5), not
  dropped: PPI is valid for any fixed scoring of the judge's output, and unparseable verdicts are not missing at
  random (long or odd answers). The uncorrected judge mean beside it stays the report's.
- A small-sample adjusted interval is reported beside ppi-python's (`adjusted_low`, `adjusted_high`), and the
  report views lead with it: when a good judge's few errors all go one way the rectifier is a rare event, and a
  normal interval on a rare event is too narrow. It adds, to the rectifier's variance only, half a
  pseudo-disagreement in each direction, one step of the rubric's scale each (a Jeffreys-style half count, as
  adjusted Wald intervals for paired proportions add counts to the discordant cells).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from statistics import fmean
from typing import Literal, TypedDict

import numpy as np

LEVEL = 0.95
PSEUDO_WEIGHT = 0.5  # half a pseudo-disagreement each way in the adjusted interval; see the module docstring
MIN_LABELS = 10     # below this, a normal-approximation interval on the rectifier is not worth printing
NULL_SCORE = 0.5    # a null verdict's score on the 0-1 scale; see the module docstring

Status = Literal["corrected", "uncorrected", "refused"]


class CorrectedJson(TypedDict):
    """A Corrected as a report's judge_corrected section holds it."""

    status: Status
    judge_mean: float | None
    estimate: float | None
    low: float | None
    high: float | None
    n: int
    N: int
    null_verdicts: int
    disagreements: int
    reason: str
    method: str
    level: float
    adjusted_low: float | None
    adjusted_high: float | None


class JudgeCorrected(CorrectedJson):
    """One judge metric's entry of judge_corrected as a run writes it: the correction and what labelling left
    out."""

    skipped: int          # labels that declined to label (label null)
    stale_labels: int     # labels for answers this run does not have
    null_score: float     # NULL_SCORE, as the report states it


@dataclass(frozen=True)
class Corrected:
    """The judge's mean beside the prediction-powered estimate of the mean human label, on a 0-1 scale."""

    status: Status               # corrected; uncorrected (no labels); refused (too few labels, see reason)
    judge_mean: float | None     # the mean of the parsed verdicts, uncorrected
    estimate: float | None       # the prediction-powered estimate of the mean human label
    low: float | None
    high: float | None
    n: int                       # labelled units (questions when grouped, else cases)
    N: int                       # judged units, labelled ones included
    null_verdicts: int           # cases whose verdict was null, scored as NULL_SCORE in the estimate
    disagreements: int = 0       # labelled cases whose label differs from the judge's score (a null always does)
    reason: str = ""
    method: str = "ppi"          # "ppi" (lam=1), "ppi++" (tuned lam) or "classical" (every unit labelled)
    level: float = LEVEL
    adjusted_low: float | None = None    # the small-sample adjusted interval around the same estimate
    adjusted_high: float | None = None

    def as_dict(self) -> CorrectedJson:
        return CorrectedJson(status=self.status, judge_mean=self.judge_mean, estimate=self.estimate, low=self.low,
                             high=self.high, n=self.n, N=self.N, null_verdicts=self.null_verdicts,
                             disagreements=self.disagreements, reason=self.reason, method=self.method,
                             level=self.level, adjusted_low=self.adjusted_low, adjusted_high=self.adjusted_high)


def _score(v: float | None) -> float:
    return NULL_SCORE if v is None else v


def _check_unit(name: str, key: str, v: float | None) -> None:
    if v is not None and not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{name} for {key!r} is {v}; scores must lie in [0, 1] (divide by the scale's maximum)")


def corrected_mean(judge: Mapping[str, float | None], labels: Mapping[str, float],
                   groups: Mapping[str, str] | None = None, min_labels: int = MIN_LABELS,
                   power_tuning: bool = False, step: float = 1.0) -> Corrected:
    """The judge's scores on every judged case (None: no verdict), human labels on a random subset, matched by
    case key, and optionally each case's question; every value on a 0-1 scale. `step` is the distance between
    two neighbouring values of the rubric's scale on that 0-1 scale (1 for pass/fail, 1/2 for 0/1/2)."""
    unit = _units(judge, labels, groups, step)
    parsed = [v for v in judge.values() if v is not None]
    judge_mean = fmean(parsed) if parsed else None
    nulls = len(judge) - len(parsed)
    all_scores: dict[str, list[float]] = {}
    for key, v in judge.items():
        all_scores.setdefault(unit[key], []).append(_score(v))
    labelled: dict[str, list[tuple[float, float]]] = {}
    for key, y in labels.items():
        labelled.setdefault(unit[key], []).append((y, _score(judge[key])))
    n, big_n = len(labelled), len(all_scores)

    # Few disagreements make the rectifier a rare event, where a normal interval is at its roughest: reported so a
    # reader can see when to label more.
    differ = sum(y != s for pairs in labelled.values() for y, s in pairs)
    uncorrected = Corrected("uncorrected", judge_mean, None, None, None, n, big_n, nulls, differ, "")
    if n == 0:
        return replace(uncorrected, reason="uncorrected: no human labels for this run's judged answers")
    if n < min_labels:
        what = "question" if groups is not None else "case"
        return replace(uncorrected, status="refused", reason=(
            f"uncorrected: {n} labelled {what}(s) of the {min_labels} a corrected estimate needs; "
            "label more with tier=labels"))
    human = np.array([fmean(p[0] for p in pairs) for pairs in labelled.values()])
    judged = np.array([fmean(p[1] for p in pairs) for pairs in labelled.values()])
    rest = np.array([fmean(s) for u, s in all_scores.items() if u not in labelled])
    return _estimate(uncorrected, human, judged, rest, power_tuning, step)


def _units(judge: Mapping[str, float | None], labels: Mapping[str, float], groups: Mapping[str, str] | None,
           step: float) -> dict[str, str]:
    """Each judged case's unit (its question when grouped, else itself), once the inputs are checked."""
    if not 0.0 < step <= 1.0:
        raise ValueError(f"step is {step}; it must lie in (0, 1] (one step of the scale divided by its maximum)")
    for key, v in judge.items():
        _check_unit("the judge score", key, v)
    for key, y in labels.items():
        _check_unit("the label", key, y)
    if unknown := sorted(set(labels) - set(judge)):
        raise ValueError(f"{len(unknown)} label(s) for cases that were not judged, e.g. {unknown[0]!r}")
    unit = dict(groups) if groups is not None else {k: k for k in judge}
    if missing := sorted(set(judge) - set(unit)):
        raise ValueError(f"no group for {len(missing)} judged case(s), e.g. {missing[0]!r}")
    return unit


def _estimate(base: Corrected, human: np.ndarray, judged: np.ndarray, rest: np.ndarray, power_tuning: bool,
              step: float) -> Corrected:
    """The corrected estimate from the labelled units' human and judge means and the unlabelled units' judge
    means; `base` carries the counts."""
    # Imported here: ppi_py pulls in numba, statsmodels and scikit-learn, seconds of start-up that a report
    # without labels must not pay for.
    import ppi_py

    alpha = 1 - LEVEL
    if rest.size == 0:
        # Every unit labelled: the judge has nothing left to add, and the labels' own mean is the estimate.
        low, high = ppi_py.classical_mean_ci(human, alpha=alpha)
        return replace(base, status="corrected", estimate=fmean(human), low=float(low), high=float(high),
                       method="classical", adjusted_low=float(low), adjusted_high=float(high))
    lam = None if power_tuning else 1.0
    estimate = float(np.squeeze(ppi_py.ppi_mean_pointestimate(human, judged, rest, lam=lam)))
    low, high = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(human, judged, rest, alpha=alpha, lam=lam))
    # The adjustment is worked out for classic PPI only; PPI++'s tuned lam changes both terms.
    adj_low, adj_high = (None, None) if power_tuning else _adjusted(estimate, rest, human - judged, step)
    return replace(base, status="corrected", estimate=estimate, low=low, high=high,
                   method="ppi++" if power_tuning else "ppi", adjusted_low=adj_low, adjusted_high=adj_high)


def _adjusted(estimate: float, judged_rest: np.ndarray, rectifier: np.ndarray, step: float) -> tuple[float, float]:
    """The interval around ppi-python's estimate with the small-sample adjustment: the judge term's variance as
    ppi-python computes it for lam=1, and the rectifier's variance over its values plus a weight-1/2
    pseudo-disagreement of +step and one of -step."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - LEVEL) / 2))
    values = np.concatenate([rectifier, [step, -step]])
    weights = np.concatenate([np.ones(rectifier.size), [PSEUDO_WEIGHT, PSEUDO_WEIGHT]])
    centre = float(np.average(values, weights=weights))
    var = float(np.average((values - centre) ** 2, weights=weights))
    half = z * math.sqrt(float(judged_rest.var()) / judged_rest.size + var / rectifier.size)
    return estimate - half, estimate + half
