"""The position curve ("lost in the middle", Liu et al. 2023): pure orderings and the curve's statistics.

One relevant passage is placed at each position 1..N among the same N-1 distractors; every position sees the
same questions, so positions are compared question by question (paired), never as independent samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from nomad_eval.core.stats import mean_interval, paired_interval, paired_p_value
from nomad_eval.metrics.aggregate import wilson

T = TypeVar("T")


def place(relevant: T, distractors: Sequence[T], position: int) -> list[T]:
    """The distractors in their own (retrieval) order with `relevant` inserted at 1-based `position`: only the
    relevant passage moves between positions, so any change in the answer is the position's doing."""
    if not 1 <= position <= len(distractors) + 1:
        raise ValueError(f"position {position} is outside 1..{len(distractors) + 1}")
    return [*distractors[: position - 1], relevant, *distractors[position - 1:]]


def positions_for(passages: int, wanted: Sequence[int] | None) -> list[int]:
    """The positions to measure: `wanted` (sorted, each checked against 1..passages), or every one."""
    if passages < 1:
        raise ValueError(f"passages={passages}: the experiment needs at least one passage")
    if not wanted:
        return list(range(1, passages + 1))
    bad = sorted({p for p in wanted if not 1 <= p <= passages})
    if bad:
        raise ValueError(f"positions {bad} are outside 1..{passages}")
    return sorted(set(wanted))


@dataclass(frozen=True)
class Point:
    position: int
    n: int                     # questions this point stands on
    correctness: float | None
    low: float | None          # 95% interval; None with fewer than two questions
    high: float | None
    method: str                # "wilson" (every value 0 or 1) or "bootstrap" (repeat-averaged values)


@dataclass(frozen=True)
class Curve:
    points: list[Point]
    questions: int                         # questions present at every position (the paired set)
    best: int | None = None                # position with the highest correctness (earliest on a tie)
    worst: int | None = None               # position with the lowest (earliest on a tie)
    delta: float | None = None             # correctness(worst) - correctness(best), paired by question
    delta_low: float | None = None
    delta_high: float | None = None
    p_value: float | None = None           # paired test of "worst and best do not differ"
    test: str | None = None                # "exact McNemar" or "sign-flip"
    excluded: list[str] = field(default_factory=list)  # questions missing a value at some position


def _wilson(values: Sequence[float]) -> tuple[float, float]:
    low, high = wilson(int(sum(values)), len(values))
    assert low is not None and high is not None  # never called on no values
    return low, high


def paired_difference(base: Sequence[float], current: Sequence[float]) -> tuple[float, float]:
    """95% interval of mean(current) - mean(base) for paired 0/1 values: Newcombe's hybrid score interval
    (method 10, 1998), built from each side's Wilson interval and their correlation. A bootstrap of a few
    discordant pairs (3 of 30, all one way) gives an interval that excludes 0 while the exact McNemar test
    says p=0.25; this one agrees with the test and stays inside [-1, 1]."""
    n = len(base)
    both = sum(1 for b, c in zip(base, current, strict=True) if b and c)
    base_only = sum(1 for b, c in zip(base, current, strict=True) if b and not c)
    cur_only = sum(1 for b, c in zip(base, current, strict=True) if c and not b)
    neither = n - both - base_only - cur_only
    p1, p2 = sum(current) / n, sum(base) / n
    l1, u1 = _wilson(current)
    l2, u2 = _wilson(base)
    denom = (both + base_only) * (cur_only + neither) * (both + cur_only) * (base_only + neither)
    # Newcombe's correction of phi for a positive association (it would otherwise collapse the interval of
    # identical sides to a point, as if no discordant pair were possible).
    cross = both * neither - base_only * cur_only
    phi = (max(cross - n / 2, 0.0) if cross > 0 else cross) / denom ** 0.5 if denom else 0.0
    d = p1 - p2
    low = d - max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2) ** 0.5
    high = d + max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2) ** 0.5
    return max(-1.0, low), min(1.0, high)


def _binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def point(position: int, values: Sequence[float], seed: int = 0, resamples: int = 2000) -> Point:
    """One position's mean with its interval: Wilson for 0/1 values (a bootstrap of all-equal 0/1 values
    would claim a zero-width interval), a bootstrap over questions for repeat-averaged ones."""
    n = len(values)
    if n == 0:
        return Point(position, 0, None, None, None, "wilson")
    mean = sum(values) / n
    if _binary(values):
        low, high = _wilson(values)
        return Point(position, n, mean, low, high, "wilson")
    iv = mean_interval(values, seed=seed, resamples=resamples)
    return Point(position, n, mean, iv.low if iv else None, iv.high if iv else None, "bootstrap")


def curve(by_question: Mapping[str, Mapping[int, float | None]], positions: Sequence[int], seed: int = 0,
          resamples: int = 2000) -> Curve:
    """The curve over the questions that have a value at every position (a value is a question's correctness
    there, averaged over repeats); a question missing one anywhere is left out everywhere, so every point and
    the paired comparison stand on the same questions."""
    kept = sorted(q for q, row in by_question.items() if all(row.get(p) is not None for p in positions))
    excluded = sorted(set(by_question) - set(kept))
    cols = {p: [float(by_question[q][p]) for q in kept] for p in positions}  # type: ignore[arg-type]
    points = [point(p, cols[p], seed, resamples) for p in positions]
    out = Curve(points, len(kept), excluded=excluded)
    if not kept:
        return out
    means = {pt.position: pt.correctness for pt in points if pt.correctness is not None}
    best = max(positions, key=lambda p: (means[p], -p))
    worst = min(positions, key=lambda p: (means[p], p))
    base, cur = cols[best], cols[worst]
    binary = _binary(base) and _binary(cur)
    low: float | None
    high: float | None
    if binary:
        low, high = paired_difference(base, cur)
    else:
        iv = paired_interval(base, cur, seed=seed, resamples=resamples) if len(kept) >= 2 else None
        low, high = (iv.low, iv.high) if iv else (None, None)
    p = paired_p_value(base, cur, binary=binary, seed=seed)
    return Curve(points, len(kept), best, worst, means[worst] - means[best], low, high, p,
                 "exact McNemar" if binary else "sign-flip", excluded)
