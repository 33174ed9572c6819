"""A run's verdict as one record: floors, the compare with its baseline, the verdict and its cause.

The same record goes into report.json, report.md, report.html, junit.xml and the console's last line, so an
artifact CI keeps always says why a job failed.
"""

from __future__ import annotations

from collections.abc import Mapping

from nomad_eval.core.compare import MetricVerdict, Verdict
from nomad_eval.metrics.registry import spec_for
from nomad_eval.report.schema import Gate, GateFloor, GateMetric


def floor_rows(metrics: Mapping[str, float | None], floors: Mapping[str, float],
               judge_means: Mapping[str, float | None] | None = None) -> list[GateFloor]:
    """Absolute floors: a run past one fails whatever the baseline says; a floor it cannot read fails too.
    `judge.<rubric>` floors read the judges' means (higher is better)."""
    out = []
    for name, floor in floors.items():
        judged = name.startswith("judge.")
        value = (judge_means or {}).get(name.removeprefix("judge.")) if judged else metrics.get(name)
        spec = None if judged else spec_for(name)
        if judged and value is None:
            out.append(GateFloor(metric=name, floor=floor, value=None, broken=True,
                                 reason=f"{name} could not be measured in this run (floor {floor:g})"))
        elif judged:
            assert value is not None
            out.append(GateFloor(metric=name, floor=floor, value=value, broken=value < floor,
                                 reason=f"{name} {value:.4f} {'<' if value < floor else '≥'} {floor:g}"))
        elif name not in metrics or spec is None:
            out.append(GateFloor(metric=name, floor=floor, value=None, broken=True,
                                 reason=f"gate names {name!r}, which this run does not report"))
        elif value is None:
            out.append(GateFloor(metric=name, floor=floor, value=None, broken=True,
                                 reason=f"{name} could not be measured in this run (floor {floor:g})"))
        else:
            higher = spec.direction == "higher"
            broken = value < floor if higher else value > floor
            sign = ("<" if higher else ">") if broken else ("≥" if higher else "≤")
            out.append(GateFloor(metric=name, floor=floor, value=value, broken=broken,
                                 reason=f"{name} {value:.4f} {sign} {floor:g}"))
    return out


def metric_row(m: MetricVerdict) -> GateMetric:
    return GateMetric(
        name=m.name, outcome=m.outcome, baseline=m.baseline, run=m.current, delta=m.delta, n=m.n,
        tolerance=m.tolerance, noise=m.noise, low=None if m.interval is None else m.interval.low,
        high=None if m.interval is None else m.interval.high, p_holm=m.p_adjusted, detectable=m.mde,
        reason=m.reason + (f"; worse: {', '.join(m.worse[:10])}" if m.worse and m.outcome in ("regression",
                                                                                          "not measured") else ""),
    )


def _cause(floors: list[GateFloor], verdict: Verdict | None, refused: str | None) -> tuple[str, str, int]:
    broken = [f for f in floors if f.broken]
    if refused is not None:
        return "not comparable", refused, 2
    if broken:
        return "floor broken", "; ".join(f.reason for f in broken), 1
    if verdict is None:
        return "pass", "every floor holds" if floors else "no floor and no baseline compare configured", 0
    if verdict.refused:
        return "not comparable", "; ".join(verdict.refused), 2
    if verdict.regressions:
        return "regression", "; ".join(_regressed(m) for m in verdict.regressions), 1
    if verdict.unmeasured or verdict.questions.missing:
        parts = [m.reason for m in verdict.unmeasured]
        if verdict.questions.missing:
            miss = verdict.questions.missing
            parts.append(f"{len(miss)} question(s) of the run's suite have no record: {', '.join(miss[:10])}")
        return "not measured", "; ".join(parts), 1
    if verdict.too_small:
        return "too small to tell", "; ".join(f"{m.name}: {m.reason}" for m in verdict.too_small), 1
    gated = [m for m in verdict.metrics if m.gated]
    return "pass", f"{len(gated)} gated metric(s) within tolerance over {verdict.common} questions", 0


def _regressed(m: MetricVerdict) -> str:
    qs = f" ({', '.join(m.worse[:8])}{' …' if len(m.worse) > 8 else ''})" if m.worse else ""
    return f"{m.name} {m.baseline:.4f} → {m.current:.4f}{qs}" if m.baseline is not None and m.current is not None \
        else m.name


def gate_record(floors: list[GateFloor], verdict: Verdict | None, *, baseline: str | None = None,
                baseline_reason: str | None = None, refused: str | None = None) -> Gate:
    name, cause, code = _cause(floors, verdict, refused)
    return Gate(
        verdict=name, cause=cause, exit_code=code, baseline=baseline, baseline_reason=baseline_reason,
        changes=list(verdict.differences) if verdict else [],
        questions=verdict.questions.listing() if verdict else {},
        metrics=[metric_row(m) for m in verdict.metrics if m.gated] if verdict else [],
        floors=floors, warnings=list(verdict.warnings) if verdict else [],
    )


def verdict_line(gate: Gate) -> str:
    """The console's last line: "verdict: floor broken: recall@5 0.7857 < 0.8"."""
    return f"verdict: {gate.verdict}" + ("" if gate.verdict == "pass" else f": {gate.cause}")


def gate_markdown(gate: Gate | None) -> list[str]:
    """The verdict section of report.md: first thing a reviewer reads."""
    if gate is None:
        return []
    out = ["## Gate", "", f"**{verdict_line(gate)}**", ""]
    if gate.baseline:
        out += [f"- baseline `{gate.baseline}` ({gate.baseline_reason})"]
    out += [f"- changed: {c}" for c in gate.changes]
    out += [f"- questions {k} ({len(v)}): {', '.join(v[:20])}" for k, v in gate.questions.items()]
    out += [f"- floor {f.metric}: {f.reason}" + (" — **broken**" if f.broken else "") for f in gate.floors]
    out += [f"- warning: {w}" for w in gate.warnings]
    if gate.metrics:
        def num(v: float | None, signed: bool = False) -> str:
            return "—" if v is None else (f"{v:+.4f}" if signed else f"{v:.4f}")

        out += ["", "| metric | n | baseline | run | delta | run-to-run noise | in general: 95% CI | p (Holm) | "
                    "detectable | tolerance | outcome |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        out += [f"| {m.name} | {m.n} | {num(m.baseline)} | {num(m.run)} | {num(m.delta, True)} | {num(m.noise)} | "
                f"[{num(m.low, True)}, {num(m.high, True)}] | {num(m.p_holm)} | {num(m.detectable)} | {m.tolerance} | "
                f"{m.outcome} |" for m in gate.metrics]
    return [*out, ""]
