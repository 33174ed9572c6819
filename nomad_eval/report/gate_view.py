"""How a run's gate record (report/schema.py's `Gate`, decided by the gate package, nomad_eval/gate/) reads: the
rows of its compared metrics, its floors, the console's last line, and the verdict section of report.md. Every
view shows the same cells, so an artifact CI keeps always says why a job failed.
"""

from __future__ import annotations

from nomad_eval.metrics.registry import spec_for
from nomad_eval.report.schema import Gate, GateFloor, GateMetric, WaterfallPart

FAILED = ("regression", "not measured", "too small to tell")  # a gated metric's outcomes that fail the run


def direction_text(name: str) -> str:
    """", lower is better" (or higher), for a line that shows a metric's baseline → run."""
    spec = spec_for(name)
    return "" if spec is None else f", {spec.direction} is better"


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
