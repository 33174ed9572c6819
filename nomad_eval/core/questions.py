"""Per-question outcomes, computed once from case records and read by reports, baselines and compare.

A case is one golden in one mode and repeat; a question is one golden in one mode. Its metric values are
means over its repeats, and it is unstable when its pass/fail flips between repeats. Reports, intervals
and compare all stand on these records, so the same question set means the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nomad_eval.metrics.aggregate import mean
from nomad_eval.metrics.answer.measures import question_outcome
from nomad_eval.records import Case


@dataclass(frozen=True)
class Question:
    key: str                      # "<id>" for retrieval, "<mode>:<id>" for generation
    id: str
    mode: str | None
    cluster: str                  # the source document questions about which are not independent
    values: dict[str, float | None]  # keyed by reported metric name ("recall@5", "e2e.correctness")
    passed: float | None          # pass rate over repeats (1/0 for a single repeat); None: not judged
    repeats: int
    unstable: bool
    tags: list[str] = field(default_factory=list)
    # Run-to-run noise of each value: the squared standard error of the mean over the repeats (0 for one repeat,
    # or repeats that agree). The gate's own uncertainty; question sampling is a different question.
    noise: dict[str, float] = field(default_factory=dict)
    # Each repeat's pass outcome in the order the repeats were asked (None: not judged): the fresh-failures
    # test (core/fresh.py) reads which draws came first.
    draws: tuple[bool | None, ...] = ()


def cluster_of(case: Case) -> str:
    """Questions about the same document share its errors; a refusal question is its own cluster."""
    docs = case.relevant_doc_ids
    return f"doc:{sorted(docs)[0]}" if docs else f"q:{case.id}"


def questions_from_cases(cases: Sequence[Case]) -> list[Question]:
    """Group cases by (mode, id) in first-seen order; generation metric names get their mode as prefix."""
    groups: dict[tuple[str | None, str], list[Case]] = {}
    for c in cases:
        groups.setdefault((c.mode, c.id), []).append(c)
    return [_question(mode, qid, group) for (mode, qid), group in groups.items()]


def _metric_values(group: Sequence[Case], prefix: str) -> tuple[dict[str, float | None], dict[str, float]]:
    """Each metric's mean over the repeats, and its run-to-run noise (squared standard error of that mean)."""
    rows = [{str(n): v for n, v in c.metrics.items()} for c in group]
    if len(rows) == 1:  # one repeat (every retrieval case): the mean of one value, (0 + v) / 1, as mean() gives
        return {f"{prefix}{n}": None if v is None else (0 + v) / 1 for n, v in rows[0].items()}, {}
    names = list(dict.fromkeys(n for r in rows for n in r))
    values = {f"{prefix}{n}": mean(r.get(n) for r in rows) for n in names}
    return values, {f"{prefix}{n}": squared_se([r.get(n) for r in rows]) for n in names}


def _question(mode: str | None, qid: str, group: Sequence[Case]) -> Question:
    prefix = f"{mode}." if mode else ""
    values, noise = _metric_values(group, prefix)
    passes = [c.passed for c in group]
    rate, flips = question_outcome(passes)
    if mode:
        judged = [float(p) for p in passes if p is not None]
        values[f"{prefix}pass_rate"] = rate
        noise[f"{prefix}pass_rate"] = squared_se(judged)
        # Whether the repeats disagree: measured only with two or more judged repeats.
        values[f"{prefix}instability"] = float(flips) if len(judged) > 1 else None
    return Question(key=f"{mode}:{qid}" if mode else qid, id=qid, mode=mode, cluster=cluster_of(group[0]),
                    values=values, passed=rate, repeats=len(group), unstable=flips,
                    tags=list(group[0].tags), noise=noise,
                    draws=tuple(c.passed for c in sorted(group, key=lambda c: c.repeat)))


def squared_se(values: Sequence[float | None]) -> float:
    """The squared standard error of the mean of one question's repeats (sample variance / repeats)."""
    xs = [float(v) for v in values if v is not None]
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs)


def stable(questions: Iterable[Question]) -> list[Question]:
    return [q for q in questions if not q.unstable]


def means(questions: Sequence[Question], names: Iterable[str]) -> dict[str, float | None]:
    """Means over the questions that measured each metric: None when none did, never 0."""
    return {n: mean(q.values.get(n) for q in questions) for n in names}


def values_of(questions: Sequence[Question], name: str) -> tuple[list[float], list[str]]:
    """The measured values of one metric and each one's cluster, in question order."""
    pairs = [(q.values[name], q.cluster) for q in questions if q.values.get(name) is not None]
    return [float(v) for v, _ in pairs if v is not None], [c for _, c in pairs]
