"""Absolute floors (gate.fail_under): a run past one fails whatever the baseline says; a floor it cannot read
fails too."""

from __future__ import annotations

from collections.abc import Mapping

from nomad_eval.core.questions import questions_from_cases
from nomad_eval.metrics.registry import spec_for
from nomad_eval.records import Case
from nomad_eval.report.schema import GateFloor, Report

Spread = tuple[int | None, float | None, float | None]  # n, low, high


def run_floors(report: Report, floors: Mapping[str, float]) -> list[GateFloor]:
    """The floors read off a report: its metrics, and its judges' means for `judge.<rubric>` floors."""
    spreads: dict[str, Spread] = {k: (iv.n, iv.low, iv.high) for k, iv in report.intervals.items()}
    judges = report.answer_part().judges
    spreads |= {f"judge.{k}": (v.get("n"), v.get("low"), v.get("high")) for k, v in judges.items()}
    return floor_rows(report.metrics, floors, {k: v.get("mean") for k, v in judges.items()}, spreads)


def floor_rows(metrics: Mapping[str, float | None], floors: Mapping[str, float],
               judge_means: Mapping[str, float | None] | None = None,
               spreads: Mapping[str, Spread] | None = None) -> list[GateFloor]:
    """Absolute floors: a run past one fails whatever the baseline says; a floor it cannot read fails too.
    `judge.<rubric>` floors read the judges' means (higher is better)."""
    return [_floor(name, floor, metrics, judge_means or {}, (spreads or {}).get(name, (None, None, None)))
            for name, floor in floors.items()]


def _floor(name: str, floor: float, metrics: Mapping[str, float | None], judge_means: Mapping[str, float | None],
           spread: Spread) -> GateFloor:
    judged = name.startswith("judge.")
    value = judge_means.get(name.removeprefix("judge.")) if judged else metrics.get(name)
    spec = None if judged else spec_for(name)
    n, low, high = spread

    def row(broken: bool, reason: str) -> GateFloor:
        return GateFloor(metric=name, floor=floor, value=value, broken=broken, reason=reason, n=n, low=low,
                         high=high)

    if not judged and (name not in metrics or spec is None):
        return row(True, f"gate names {name!r}, which this run does not report")
    if value is None:
        return row(True, f"{name} could not be measured in this run (floor {floor:g})")
    higher = judged or (spec is not None and spec.direction == "higher")
    broken = value < floor if higher else value > floor
    sign = ("<" if higher else ">") if broken else ("≥" if higher else "≤")
    return row(broken, f"{name} {value:.4f} {sign} {floor:g}")


def floors_without(rows: list[GateFloor], cases: list[Case], stale: set[str]) -> list[GateFloor]:
    """The metric floors read over the questions whose goldens are up to date: an out-of-date golden measures a
    question the corpus no longer poses, so it breaks no floor (it has its own verdict). Judge floors stay."""
    questions = [q for q in questions_from_cases(cases) if q.id not in stale]
    out = []
    for f in rows:
        values = [v for q in questions if (v := q.values.get(f.metric)) is not None]
        if f.metric.startswith("judge.") or not values:
            out.append(f)
            continue
        (row,) = floor_rows({f.metric: sum(values) / len(values)}, {f.metric: f.floor}, spreads={
            f.metric: (len(values), None, None)})
        out.append(row.model_copy(update={"reason": f"{row.reason} ({len(stale)} out-of-date golden(s) left out)"}))
    return out
