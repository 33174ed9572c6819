"""What a suite can tell, before a change is made: per metric, the change it detects at 80% power and the
questions (and, for answers that vary, the repeats) seeing its tolerance takes (tier=plan prints and files it)."""

from __future__ import annotations

from dataclasses import replace
from typing import NotRequired, TypedDict

from nomad_eval.core.noise import gate_drop_at, repeats_for_drop
from nomad_eval.core.power import detectable_change, mostly_zero_one
from nomad_eval.core.questions import Question, questions_from_cases, stable, values_of
from nomad_eval.core.stats import planning_sd, questions_needed
from nomad_eval.metrics.registry import spec_for
from nomad_eval.records import Case


class NoisePlan(TypedDict):
    drop: float                           # the drop planned for: plan.drop, else twice the tolerance
    repeats_for_drop: int | None          # repeats a side that find it at 80%; None: no repeats to tell from
    gate_80_drop: float | None            # the drop the gate finds at 80% with the baseline's repeats


class PlanRow(TypedDict):
    """One metric of plan.json: the suite's detectable change, and (answers that vary) the repeats it needs."""

    metric: str
    n: int
    mean: float
    delta_sd: float
    mde: float | None
    tolerance: float
    questions_for_tolerance: int | None
    drop: NotRequired[float]
    repeats_for_drop: NotRequired[int | None]
    gate_80_drop: NotRequired[float | None]


def plan_rows(cases: list[Case], names: list[str], correlation: float, exclude_unstable: bool = False,
              tolerance: float | None = None, drop: float | None = None) -> list[PlanRow]:
    """Per metric, the suite's detectable change and what seeing its tolerance (or `tolerance`, one for every
    metric, as compare.tolerance gives) would take."""
    questions = questions_from_cases(cases)
    if exclude_unstable:
        questions = stable(questions)
    rows: list[PlanRow] = []
    for name in names:
        spec = spec_for(name)
        if spec is not None and tolerance is not None:
            spec = replace(spec, tolerance=tolerance)
        values, _ = values_of(questions, name)
        if spec is None or len(values) < 2:
            continue
        sd = planning_sd(values, correlation)
        tol = spec.allowed(sum(values) / len(values))
        row = PlanRow(metric=name, n=len(values), mean=sum(values) / len(values), delta_sd=sd,
                      mde=detectable_change(values, len(names), correlation, binary=mostly_zero_one(values)),
                      tolerance=tol, questions_for_tolerance=questions_needed(tol, sd, alpha=0.05 / len(names)))
        if (noise := _noise_plan(questions, name, tol, drop, sum(n.count(".") > 0 for n in names))) is not None:
            row["drop"], row["repeats_for_drop"], row["gate_80_drop"] = (noise["drop"], noise["repeats_for_drop"],
                                                                         noise["gate_80_drop"])
        rows.append(row)
    return rows


def _noise_plan(questions: list[Question], name: str, allowed: float, drop: float | None, family: int
                ) -> NoisePlan | None:
    """For answers that vary (else None): the repeats the gate needs to find a drop of `drop` (default twice the
    tolerance) at 80%, and the drop it finds at 80% with the baseline's own repeats."""
    if not any(q.mode for q in questions):
        return None
    target = 2 * allowed if drop is None else drop
    repeats = max((q.repeats for q in questions), default=1)
    return NoisePlan(drop=target, repeats_for_drop=repeats_for_drop(questions, name, target, allowed, family),
                     gate_80_drop=gate_drop_at(questions, name, allowed, family, repeats))
