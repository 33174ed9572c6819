"""A run's headline numbers from its questions: each metric's mean, its n and a seeded 95% interval; and the
intervals of its judge means (add_judge_intervals).

A judge mean is a mean over cases, and the repeats of one question share most of their answer, so they are not
independent draws: the interval resamples whole questions (a cluster bootstrap, `stats.mean_interval` with the
question as the cluster), which keeps the statistic the case mean the report prints. The probability-weighted
mean (graded rubrics, token logprobs) gets its own interval the same way. n is given both as cases and as
questions, because the interval's width follows the questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from nomad_eval.core.questions import Question, values_of
from nomad_eval.core.stats import Interval, mean_interval, mean_intervals
from nomad_eval.metrics.registry import MetricName
from nomad_eval.records import AnswerCase
from nomad_eval.records.sections import JudgeSection


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


class JudgeInterval(TypedDict):
    low: float | None
    high: float | None
    questions: int                    # distinct questions judged; fewer than 2: no interval


def _judge_interval(values: list[float], questions: list[str], resamples: int, seed: int) -> JudgeInterval:
    iv = mean_interval(values, questions, resamples=resamples, seed=seed) if len(set(questions)) >= 2 else None
    return JudgeInterval(low=None if iv is None else iv.low, high=None if iv is None else iv.high,
                         questions=len(set(questions)))


def add_judge_intervals(section: JudgeSection, cases: Sequence[AnswerCase],
                        scale_max: Mapping[str, int], resamples: int, seed: int) -> None:
    """Write `low`, `high` and `questions` (and `low_weighted`, `high_weighted`) into each `<mode>.<rubric>` entry
    of a judge section, from the parsed verdicts in the cases; None bounds with fewer than two questions judged."""
    for key, entry in section.items():
        parsed = MetricName.parse(key)
        mode, name = parsed.mode, parsed.family
        top = scale_max[name]
        plain: tuple[list[float], list[str]] = ([], [])
        weighted: tuple[list[float], list[str]] = ([], [])
        for c in cases:
            if c.mode != mode:
                continue
            v = c.judges.get(name)
            if v is not None:
                plain[0].append(v / top)
                plain[1].append(c.id)
            w = c.judges_weighted.get(name)
            if w is not None:
                weighted[0].append(w / top)
                weighted[1].append(c.id)
        if len(plain[0]) != entry.get("n"):
            raise ValueError(f"judge section {key}: {entry.get('n')} values but {len(plain[0])} parsed verdicts in "
                             "the cases")
        iv = _judge_interval(*plain, resamples, seed)
        entry["low"], entry["high"], entry["questions"] = iv["low"], iv["high"], iv["questions"]
        if "mean_weighted" in entry:
            w_iv = _judge_interval(*weighted, resamples, seed)
            entry["low_weighted"], entry["high_weighted"] = w_iv["low"], w_iv["high"]
