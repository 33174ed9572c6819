"""Reading runs and baselines written under a metric's old name, one way: the old values become the new measures'
values, and nothing writes the old name again.

`refusal_correctness` (1 when the answer declined a refusal golden or answered an answerable one) split into
`refusal_recall` (refusal goldens) and `false_refusal_rate` (answerable goldens, 1 when the answer declined): on a
refusal golden the old value is the recall, on an answerable one it is 1 - the false refusal.
"""

from __future__ import annotations

from nomad_eval.metrics.answer.measures import FALSE_REFUSAL, OLD_REFUSAL, REFUSAL_RECALL
from nomad_eval.metrics.registry import MetricName
from nomad_eval.records import Case, Values
from nomad_eval.report.schema import Report

OLD = MetricName(None, OLD_REFUSAL)
RECALL, FALSE = MetricName(None, REFUSAL_RECALL.family), MetricName(None, FALSE_REFUSAL.family)


def _split(old: float | None, expect_refusal: bool) -> Values:
    if expect_refusal:
        return {RECALL: old, FALSE: None}
    return {RECALL: None, FALSE: None if old is None else 1.0 - old}


def renamed_cases(cases: list[Case]) -> list[Case]:
    """Each case holding the old name with the new measures in its place (the others as they are)."""
    out: list[Case] = []
    for c in cases:
        if OLD not in c.metrics:
            out.append(c)
            continue
        new = {k: v for k, v in c.metrics.items() if k != OLD} | _split(c.metrics[OLD], c.expect_refusal)
        out.append(c.model_copy(update={"metrics": new}))
    return out


def renamed_report(report: Report, cases: list[Case]) -> Report:
    """The report with each mode's old mean replaced by the new measures' means over the (renamed) cases: per
    question (its repeats averaged first), then over the questions, as a run computes them."""
    old = [n for n in report.metrics if (p := MetricName.try_parse(n)) is not None and p.family == OLD_REFUSAL]
    if not old:
        return report
    metrics = {k: v for k, v in report.metrics.items() if k not in old}
    for name in old:
        mode = MetricName.parse(name).mode
        for family in (REFUSAL_RECALL.family, FALSE_REFUSAL.family):
            metrics[f"{mode}.{family}" if mode else family] = _mean_over_questions(cases, mode, family)
    intervals = {k: v for k, v in report.intervals.items() if k not in old}
    return report.model_copy(update={"metrics": metrics, "intervals": intervals})


def _mean_over_questions(cases: list[Case], mode: str | None, family: str) -> float | None:
    by_question: dict[str, list[float]] = {}
    for c in cases:
        v = c.metrics.get(MetricName(None, family))
        if c.mode == mode and v is not None:
            by_question.setdefault(c.id, []).append(v)
    means = [sum(vs) / len(vs) for vs in by_question.values()]
    return sum(means) / len(means) if means else None
