"""A run's verdict as one record: floors, the compare with its baseline, the verdict and its cause.

The same record goes into report.json, report.md, report.html, junit.xml and the console's last line, so an
artifact CI keeps always says why a job failed. In junit.xml (the format CI dashboards read) it is one test case
per floor and per gated metric, one for the suite's questions all being measured, and one for the runs being
comparable: a broken floor, a regression or a missing value is a failure; a compare that could not be made is an
error; everything else passes with its figures in its output.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from nomad_eval.base.atomic import write_atomic
from nomad_eval.core.compare import MetricVerdict, Verdict
from nomad_eval.metrics.registry import spec_for
from nomad_eval.report.schema import Gate, GateFloor, GateMetric, Report, WaterfallPart

Spread = tuple[int | None, float | None, float | None]  # n, low, high
FAILED = ("regression", "not measured", "too small to tell")  # a gated metric's outcomes that fail the run


def configured_floors(gate: Mapping[str, Any] | None) -> dict[str, float]:
    """`gate.fail_under` of a config (the run's, or a saved report's) as metric -> floor."""
    raw = (gate or {}).get("fail_under") or {}
    return {str(k): float(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def run_floors(report: Report, floors: Mapping[str, float]) -> list[GateFloor]:
    """The floors read off a report: its metrics, and its judges' means for `judge.<rubric>` floors."""
    spreads: dict[str, Spread] = {k: (iv.n, iv.low, iv.high) for k, iv in report.intervals.items()}
    spreads |= {f"judge.{k}": (v.get("n"), v.get("low"), v.get("high")) for k, v in report.judges.items()}
    return floor_rows(report.metrics, floors, {k: v.get("mean") for k, v in report.judges.items()}, spreads)


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


def metric_row(m: MetricVerdict) -> GateMetric:
    return GateMetric(
        name=m.name, outcome=m.outcome, baseline=m.baseline, run=m.current, delta=m.delta, n=m.n,
        tolerance=m.tolerance, noise=m.noise, low=None if m.interval is None else m.interval.low,
        high=None if m.interval is None else m.interval.high, p_holm=m.p_adjusted, detectable=m.mde,
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


def direction_text(name: str) -> str:
    """", lower is better" (or higher), for a line that shows a metric's baseline → run."""
    spec = spec_for(name)
    return "" if spec is None else f", {spec.direction} is better"


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


GATE_COLUMNS = ("metric", "n", "baseline", "run", "delta", "run-to-run noise", "in general: 95% CI", "p (Holm)",
                "detectable", "tolerance", "outcome")


def gate_cells(m: GateMetric) -> list[str]:
    """A compared metric's row, in GATE_COLUMNS' order: report.md, report.html and the console show the same."""
    def num(v: float | None, form: str = ".4f") -> str:
        return "—" if v is None else format(v, form)

    ci = "—" if m.low is None or m.high is None else f"[{m.low:+.4f}, {m.high:+.4f}]"
    return [m.name, str(m.n), num(m.baseline), num(m.run), num(m.delta, "+.4f"), num(m.noise), ci, num(m.p_holm),
            num(m.detectable), m.tolerance, m.outcome]


def floor_spread(f: GateFloor) -> str:
    """" [low, high] n=N" after a floor's value, where the run measured its interval."""
    if f.n is None:
        return ""
    bounds = "" if f.low is None or f.high is None else f" [{f.low:.4f}, {f.high:.4f}]"
    return f"{bounds} n={f.n}"


def verdict_line(gate: Gate) -> str:
    """The console's last line, with what was gated: "verdict: floor broken: recall@5 0.7857 < 0.8", "verdict: pass:
    nothing gated: no floor and no baseline (...)"."""
    return f"verdict: {gate.verdict}: {gate.cause}"


def gate_markdown(gate: Gate | None) -> list[str]:
    """The verdict section of report.md: first thing a reviewer reads."""
    if gate is None:
        return []
    out = ["## Gate", "", f"**{verdict_line(gate)}**", ""]
    if gate.baseline:
        out += [f"- baseline `{gate.baseline}` ({gate.baseline_reason})"]
    out += [f"- changed: {c}" for c in gate.changes]
    out += [f"- questions {k} ({len(v)}): {', '.join(v[:20])}" for k, v in gate.questions.items()]
    out += [f"- floor {f.metric}: {f.reason}{floor_spread(f)}" + (" — **broken**" if f.broken else "")
            for f in gate.floors]
    out += [f"- golden out of date{' (compare.stale=warn)' if gate.stale_warn else ''}: {s}" for s in gate.stale]
    out += [f"- warning: {w}" for w in gate.warnings]
    out += [f"- flipped: {line}" for line in gate.attribution]
    out += [f"- waterfall {m}: {waterfall_text(parts)}" for m, parts in gate.waterfall.items()]
    if gate.metrics:
        out += ["", "| " + " | ".join(GATE_COLUMNS) + " |", "|" + "---|" * len(GATE_COLUMNS)]
        out += ["| " + " | ".join(gate_cells(m)) + " |" for m in gate.metrics]
    return [*out, ""]


def waterfall_text(parts: list[WaterfallPart]) -> str:
    """"pipeline.chunk_size -0.0667 (q1, q2); interaction +0.0000; …": a metric's delta split by change."""
    return "; ".join(f"{p.change} {p.value:+.4f}" + (f" ({', '.join(p.questions[:8])})" if p.questions else "")
                     for p in parts)


def _summary(m: GateMetric) -> str:
    """A compared metric in one line for junit.xml, its numbers rounded as the reports show them."""
    cells = dict(zip(GATE_COLUMNS, gate_cells(m), strict=True))
    return (f"{m.outcome}: {m.name} {cells['baseline']} -> {cells['run']}{direction_text(m.name)}, delta "
            f"{cells['delta']}, run-to-run noise {cells['run-to-run noise']}, in general 95% CI "
            f"{cells['in general: 95% CI']}, n={m.n}. {m.reason}")


def _case(suite: ET.Element, name: str, classname: str, failure: str | None = None, error: str | None = None,
          out: str | None = None) -> None:
    tc = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if failure is not None:
        ET.SubElement(tc, "failure", message=failure.splitlines()[0][:500]).text = failure
    if error is not None:
        ET.SubElement(tc, "error", message=error.splitlines()[0][:500]).text = error
    if out is not None:
        ET.SubElement(tc, "system-out").text = out


def _coverage_cases(root: ET.Element, gate: Gate, suite: str) -> None:
    """The goldens-up-to-date and every-question-measured cases, when anything was compared."""
    if gate.metrics or gate.stale:  # a golden out of date is its own failure, beside the metrics' regressions
        stale = "\n".join(gate.stale)
        _case(root, "goldens up to date", f"{suite}.compare",
              failure=f"{len(gate.stale)} golden(s) out of date:\n{stale}" if gate.stale and not gate.stale_warn
              else None, out=f"out of date (compare.stale=warn):\n{stale}" if gate.stale_warn and gate.stale else None)
    missing = gate.questions.get("not measured")
    if gate.metrics or missing:
        _case(root, "every question measured", f"{suite}.compare",
              failure=f"{len(missing)} question(s) of the suite have no record: {', '.join(missing)}"
              if missing else None)


def write_junit(gate: Gate, path: Path, suite: str = "nomad-eval") -> None:
    root = ET.Element("testsuite", name=suite)
    props = ET.SubElement(root, "properties")
    ET.SubElement(props, "property", name="verdict", value=gate.verdict)
    ET.SubElement(props, "property", name="cause", value=gate.cause)
    if gate.baseline:
        ET.SubElement(props, "property", name="baseline", value=gate.baseline)
    for f in gate.floors:
        _case(root, f"floor {f.metric}", f"{suite}.floors", failure=f.reason if f.broken else None,
              out=None if f.broken else f.reason)
    if gate.verdict == "not comparable":
        _case(root, "comparable", f"{suite}.compare", error=gate.cause)
    for m in gate.metrics:
        _case(root, f"{m.name} ({m.outcome})", f"{suite}.compare",
              failure=_summary(m) if m.outcome in FAILED else None, out=None if m.outcome in FAILED else _summary(m))
    _coverage_cases(root, gate, suite)
    if not root.findall("testcase"):
        _case(root, "gate", suite, out=gate.cause)
    cases = root.findall("testcase")
    root.set("tests", str(max(1, len(cases))))
    root.set("failures", str(sum(tc.find("failure") is not None for tc in cases)))
    root.set("errors", str(sum(tc.find("error") is not None for tc in cases)))
    root.set("skipped", "0")
    if gate.changes:
        ET.SubElement(root, "system-out").text = "changed since the baseline:\n" + "\n".join(gate.changes)
    write_atomic(path, ET.tostring(root, encoding="unicode", xml_declaration=True))
