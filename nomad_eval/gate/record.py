"""A run's verdict as one record: floors, the compare with its baseline, the verdict and its cause.

The same record goes into report.json, report.md, report.html, junit.xml and the console's last line
(report/gate_view.py renders it), so an artifact CI keeps always says why a job failed.
"""

from __future__ import annotations

from nomad_eval.gate.outcome import MetricVerdict, Verdict
from nomad_eval.report.gate_view import direction_text
from nomad_eval.report.schema import Gate, GateFloor, GateMetric


def metric_row(m: MetricVerdict) -> GateMetric:
    return GateMetric(
        name=m.name, outcome=m.outcome, baseline=m.baseline, run=m.current, delta=m.delta, n=m.n,
        tolerance=m.tolerance, noise=m.noise, noise_source=m.noise_source,
        low=None if m.interval is None else m.interval.low, high=None if m.interval is None else m.interval.high,
        p_holm=m.p_adjusted, detectable=m.mde,
        reason=m.reason + (f"; worse: {', '.join(m.worse[:10])}" if m.worse and m.outcome in ("regression",
                                                                                          "not measured") else ""),
    )


NOTHING_GATED = ("nothing gated: no floor and no baseline (gate.fail_under sets floors, compare.after_run=true "
                 "compares with the baseline)")


def _cause(floors: list[GateFloor], verdict: Verdict | None, refused: str | None) -> tuple[str, str, int]:
    broken = [f for f in floors if f.broken]
    if refused is not None:
        return "not comparable", refused, 2
    if broken:
        return "floor broken", "; ".join(f.reason for f in broken), 1
    if verdict is None:
        return "pass", "every floor holds" if floors else NOTHING_GATED, 0
    return _verdict_cause(floors, verdict)


def _unmeasured_cause(verdict: Verdict) -> str | None:
    """Why some of the comparison was not measured, or None when all of it was."""
    if not (verdict.unmeasured or verdict.questions.missing or verdict.infra_over):
        return None
    parts = [m.reason for m in verdict.unmeasured] + ([verdict.infra_over] if verdict.infra_over else [])
    if verdict.questions.missing:
        miss = verdict.questions.missing
        parts.append(f"{len(miss)} question(s) of the run's suite have no record: {', '.join(miss[:10])}")
    return "; ".join(parts)


def _verdict_cause(floors: list[GateFloor], verdict: Verdict) -> tuple[str, str, int]:
    """The gate's outcome from the baseline comparison, once every floor holds."""
    if verdict.refused:
        return "not comparable", "; ".join(verdict.refused), 2
    if verdict.regressions:
        return "regression", "; ".join(_regressed(m) for m in verdict.regressions), 1
    unmeasured = _unmeasured_cause(verdict)
    if unmeasured is not None:
        return "not measured", unmeasured, 1
    if verdict.stale and not verdict.stale_warn:
        return "golden out of date", "; ".join(verdict.stale), 1
    if verdict.too_small:
        return "too small to tell", "; ".join(f"{m.name}: {m.reason}" for m in verdict.too_small), 1
    gated = [m for m in verdict.metrics if m.gated]
    held = "every floor holds; " if floors else ""
    return "pass", f"{held}{len(gated)} gated metric(s) within tolerance over {verdict.common} questions", 0


def _regressed(m: MetricVerdict) -> str:
    qs = f" ({', '.join(m.worse[:8])}{' …' if len(m.worse) > 8 else ''})" if m.worse else ""
    if m.baseline is None or m.current is None:
        return m.name
    return f"{m.name} worse: {m.baseline:.4f} → {m.current:.4f}{direction_text(m.name)}{qs}"


def gate_record(floors: list[GateFloor], verdict: Verdict | None, *, baseline: str | None = None,
                baseline_reason: str | None = None, refused: str | None = None) -> Gate:
    name, cause, code = _cause(floors, verdict, refused)
    return Gate(
        verdict=name, cause=cause, exit_code=code, baseline=baseline, baseline_reason=baseline_reason,
        changes=list(verdict.differences) if verdict else [],
        questions=verdict.questions.listing() if verdict else {},
        metrics=[metric_row(m) for m in verdict.metrics if m.gated] if verdict else [],
        floors=floors, warnings=list(verdict.warnings) if verdict else [],
        stale=list(verdict.stale) if verdict else [], stale_warn=bool(verdict and verdict.stale_warn),
        evidence=dict(verdict.evidence) if verdict else {},
        newly_failing=list(verdict.newly_failing) if verdict else [],
    )
