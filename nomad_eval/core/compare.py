"""The gate: compare a run's questions with a baseline's, metric by metric, and say what the difference means.

Pure logic over per-question records (no files, no reports). The rules:
- both sides cover the same questions: the common keys, minus every question unstable on either side;
- a gated metric the baseline measured but the run did not is a failure, never a pass;
- each metric gets its delta on the common set, a 95% interval from resampling whole questions (or whole
  source documents), a paired test suited to it, and the minimum effect the suite could have detected;
- the verdict is "regression" (worse than tolerance and significant after Holm across the gated metrics),
  "within noise", or "too small to tell" (the detectable effect exceeds the tolerance).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from nomad_eval.core.questions import Question
from nomad_eval.core.stats import (
    Alternative,
    Interval,
    adjust,
    minimum_detectable_effect,
    paired_interval,
    paired_p_value,
)
from nomad_eval.metrics.registry import EPS, spec_for

Outcome = Literal["regression", "within noise", "too small to tell", "not measured", "not gated"]
ALPHA = 0.05
POWER = 0.8


@dataclass(frozen=True)
class MetricVerdict:
    name: str
    gated: bool
    outcome: Outcome
    baseline: float | None   # mean over the common questions
    current: float | None
    n: int                   # questions in the pairing
    interval: Interval | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    mde: float | None = None
    tolerance: str = "—"
    reason: str = ""

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


@dataclass
class Verdict:
    refused: list[str] = field(default_factory=list)   # not comparable: exit 2
    metrics: list[MetricVerdict] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)  # system-under-test settings, "key base → run"
    newly_failing: list[str] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)   # excluded from both sides
    common: int = 0
    only_baseline: int = 0
    only_run: int = 0
    clustered: bool = False
    strict: bool = False  # "too small to tell" fails the gate

    @property
    def regressions(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.gated and m.outcome in ("regression", "not measured")]

    @property
    def too_small(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.gated and m.outcome == "too small to tell"]

    @property
    def outcome(self) -> str:
        if self.refused:
            return "not comparable"
        if self.regressions:
            return "regression"
        return "too small to tell" if self.too_small else "within noise"

    @property
    def exit_code(self) -> int:
        if self.refused:
            return 2
        if self.regressions or (self.strict and self.too_small):
            return 1
        return 0


def _pairs(base: Mapping[str, Question], run: Mapping[str, Question], keys: Sequence[str], name: str
           ) -> tuple[list[float], list[float], list[str], list[str]]:
    """Aligned values of questions both sides measured, and the questions the run left unmeasured."""
    b, c, clusters, lost = [], [], [], []
    for k in keys:
        bv, cv = base[k].values.get(name), run[k].values.get(name)
        if bv is not None and cv is None:
            lost.append(k)
        elif bv is not None and cv is not None:
            b.append(float(bv))
            c.append(float(cv))
            clusters.append(base[k].cluster)
    return b, c, clusters, lost


def compare_questions(
    base: Sequence[Question], run: Sequence[Question], gated: Sequence[str], *,
    base_metrics: Mapping[str, float | None], run_metrics: Mapping[str, float | None],
    informational: Sequence[str] = (), cluster: bool = False, resamples: int = 2000, seed: int = 0,
    strict: bool = False,
) -> Verdict:
    v = Verdict(clustered=cluster, strict=strict)
    b_by, r_by = {q.key: q for q in base}, {q.key: q for q in run}
    unstable = {k for k, q in b_by.items() if q.unstable} | {k for k, q in r_by.items() if q.unstable}
    v.unstable = sorted(unstable & (b_by.keys() | r_by.keys()))
    keys = [k for k in b_by if k in r_by and k not in unstable]
    v.common, v.only_baseline, v.only_run = len(keys), len(b_by.keys() - r_by.keys()), len(r_by.keys() - b_by.keys())
    if not keys:
        why = f"{len(v.unstable)} unstable on either side" if v.unstable else "no question ids in common"
        v.refused.append(f"no questions to compare ({why}); a gate over nothing cannot pass")
        return v
    rows: list[MetricVerdict] = []
    tests: list[tuple[int, float]] = []
    for name in list(gated) + [n for n in informational if n not in gated]:
        is_gated = name in gated
        spec = spec_for(name)
        tol = spec.tolerance_text() if spec else "—"
        if is_gated and base_metrics.get(name) is not None and run_metrics.get(name) is None:
            why = "missing from the run" if name not in run_metrics else "null in the run (not measured)"
            rows.append(MetricVerdict(name, True, "not measured", base_metrics.get(name), None, 0, tolerance=tol,
                                      reason=f"{name} is {why}; the baseline measured it"))
            continue
        b, c, clusters, lost = _pairs(b_by, r_by, keys, name)
        if is_gated and lost:
            # Dropping them would compare fewer questions than the baseline measured: null never passes.
            rows.append(MetricVerdict(name, True, "not measured", None, None, len(b), tolerance=tol,
                                      reason=f"{name}: {len(lost)} question(s) the baseline measured are null in "
                                             f"the run ({', '.join(lost[:5])})"))
            continue
        if not b:
            if is_gated:
                rows.append(MetricVerdict(name, True, "not measured", None, None, 0, tolerance=tol,
                                          reason=f"{name}: no common question measured it on both sides"))
            elif (base_metrics.get(name) is None) != (run_metrics.get(name) is None):
                # One side measured it (a metric newer than the baseline): shown, never counted as passing.
                side = "baseline" if base_metrics.get(name) is None else "run"
                rows.append(MetricVerdict(name, False, "not measured", base_metrics.get(name), run_metrics.get(name),
                                          0, tolerance=tol, reason=f"{name}: the {side} did not measure it"))
            continue
        bm, cm = sum(b) / len(b), sum(c) / len(c)
        cl = clusters if cluster else None
        interval = paired_interval(b, c, cl, resamples=resamples, seed=seed)
        if not is_gated or spec is None:
            rows.append(MetricVerdict(name, False, "not gated", bm, cm, len(b), interval, tolerance=tol))
            continue
        alternative: Alternative = "worse_if_lower" if spec.direction == "higher" else "worse_if_higher"
        p = paired_p_value(b, c, binary=spec.binary and all(x in (0.0, 1.0) for x in b + c),
                           alternative=alternative, clusters=cl, seed=seed)
        deltas = [y - x for x, y in zip(b, c, strict=True)]
        mde = minimum_detectable_effect(statistics.stdev(deltas) if len(deltas) > 1 else 0.0, len(deltas),
                                        alpha=ALPHA, power=POWER)
        tests.append((len(rows), p))
        rows.append(MetricVerdict(name, True, "within noise", bm, cm, len(b), interval, p, None, mde, tol))
    adjusted = adjust([p for _, p in tests], "holm")
    for (i, _), p_adj in zip(tests, adjusted, strict=True):
        rows[i] = _decide(rows[i], p_adj)
    v.metrics = rows
    v.newly_failing = sorted({r_by[k].id for k in keys if b_by[k].passed == 1.0 and r_by[k].passed == 0.0})
    return v


def _decide(row: MetricVerdict, p_adj: float) -> MetricVerdict:
    spec = spec_for(row.name)
    assert spec is not None and row.baseline is not None and row.current is not None
    worse = spec.worsening(row.baseline, row.current)
    allowed = spec.allowed(row.baseline)
    significant = p_adj < ALPHA
    if worse > allowed + EPS and significant:
        outcome: Outcome = "regression"
        reason = f"worse by {worse:.4f} > tolerance {allowed:g}, significant (Holm p={p_adj:.3g})"
    elif row.mde is not None and row.mde > allowed + EPS:
        outcome = "too small to tell"
        reason = (f"the suite detects {row.mde:.4f} at 80% power (n={row.n}), more than the tolerance {allowed:g}; "
                  f"delta {row.current - row.baseline:+.4f}")
    else:
        outcome = "within noise"
        reason = ("not significant" if worse > allowed + EPS else "inside tolerance") + f" (Holm p={p_adj:.3g})"
    return MetricVerdict(row.name, True, outcome, row.baseline, row.current, row.n, row.interval, row.p_value, p_adj,
                         row.mde, row.tolerance, reason)
