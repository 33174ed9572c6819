"""A run's headline numbers from its questions: each metric's mean, its n and a seeded 95% interval."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nomad_eval.core.questions import Question, values_of
from nomad_eval.core.stats import mean_interval


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
    resamples whole questions, or whole source documents when `cluster` is set."""
    out: dict[str, Summary] = {}
    for name in names:
        values, clusters = values_of(questions, name)
        if not values:
            out[name] = Summary(None, 0, None, None, None)
            continue
        iv = mean_interval(values, clusters if cluster else None, seed=seed, resamples=resamples)
        out[name] = Summary(sum(values) / len(values), len(values), iv.low if iv else None, iv.high if iv else None,
                            len(set(clusters)) if cluster else None)
    return out
