"""A run's headline numbers from its questions: each metric's mean, its n and a seeded 95% interval."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nomad_eval.core.questions import Question, values_of
from nomad_eval.core.stats import Interval, mean_interval, mean_intervals


@dataclass(frozen=True)
class Summary:
    mean: float | None
    n: int
    low: float | None
    high: float | None
    clusters: int | None


def summarize(questions: Sequence[Question], names: Iterable[str], *, cluster: bool = False, seed: int = 0,
              resamples: int = 2000) -> dict[str, Summary]:
    """Means over the questions that measured each metric (None when none did) with an interval that
    resamples whole questions, or whole source documents when `cluster` is set.

    Metrics measured on the same questions are resampled together, in one bootstrap per set of questions."""
    names = list(names)
    measured = {name: values_of(questions, name) for name in names}
    intervals: dict[str, Interval | None] = {}
    if cluster:
        intervals = {name: mean_interval(v, c, seed=seed, resamples=resamples)
                     for name, (v, c) in measured.items() if v}
    else:
        groups: dict[tuple[bool, ...], list[str]] = {}
        for name in names:
            if measured[name][0]:
                groups.setdefault(tuple(q.values.get(name) is not None for q in questions), []).append(name)
        for group in groups.values():
            rows = [measured[name][0] for name in group]
            intervals.update(zip(group, mean_intervals(rows, seed=seed, resamples=resamples), strict=True))
    out: dict[str, Summary] = {}
    for name in names:
        values, clusters = measured[name]
        if not values:
            out[name] = Summary(None, 0, None, None, None)
            continue
        iv = intervals[name]
        if not cluster and len(values) > 1 and len(set(values)) == 1 and values[0] in (0.0, 1.0):
            iv = wilson_interval(int(sum(values)), len(values))
        out[name] = Summary(sum(values) / len(values), len(values), iv.low if iv else None, iv.high if iv else None,
                            len(set(clusters)) if cluster else None)
    return out


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval:
    """A proportion at 0 or 1 on every question: resampling can only give back [p, p], a zero-width interval that
    claims certainty 11 questions cannot give. Wilson's score interval is what the data says instead."""
    from scipy import stats

    ci = stats.binomtest(successes, n).proportion_ci(level, method="wilson")
    return Interval(float(ci.low), float(ci.high))
