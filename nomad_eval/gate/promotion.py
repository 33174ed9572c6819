"""What promote checks before a run replaces the suite's reference: the run's own floors and gate, and its compare
with the baseline it would replace (each gated metric old → new on the way)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.markup import escape

from nomad_eval.base.console import console
from nomad_eval.data.anchors import unanchored
from nomad_eval.gate.choose import PROMOTE_HINT
from nomad_eval.gate.decision import Explain, decide
from nomad_eval.gate.floors import run_floors
from nomad_eval.gate.settings import GateSettings, configured_floors
from nomad_eval.report.baseline import load_run
from nomad_eval.report.gate_view import direction_text
from nomad_eval.report.markdown import fmt
from nomad_eval.report.schema import Report


def name_unanchored(report: Report) -> None:
    """A golden whose pattern its relevant documents never say is a defect of the suite the baseline would carry:
    named (as lint names it), not refused, since a computed answer may be meant."""
    for line in unanchored(report.subject.anchors if report.subject else {}):
        console.print(f"[yellow]warning:[/] {escape(line)}: no evidence to anchor (tier=corpus action=lint)")


def objections(run: Path, settings: GateSettings, explain: Explain | None = None) -> list[str]:
    """Why this run should not become a baseline; prints old → new for every gated metric on the way. It is
    compared with the baseline compare would use for it (`settings`, floors aside: the run's own apply)."""
    if (run / "matrix.json").exists():
        return []
    report, cases = load_run(run)
    if report.status != "ok" or report.identity is None:
        return []  # promote() refuses a failed run itself, with its own message (exit 2)
    name_unanchored(report)
    # The floors the run was made with (its saved config), so a promote anywhere applies the same ones.
    floors = run_floors(report, configured_floors(report.config.get("gate")))
    out = [f"floor broken: {f.reason}" for f in floors if f.broken]
    if report.gate is not None and report.gate.exit_code == 1 and report.gate.verdict != "floor broken":
        out.append(f"the run's own gate said {report.gate.verdict}: {report.gate.cause}")
    outcome = decide(report, cases, replace(settings, floors={}, after_run=True), explain=explain)
    g = outcome.gate
    if g.verdict == "not comparable":
        # The cause's next step is to promote, which is what this is doing: it is left out.
        first = g.cause.replace(f"; {PROMOTE_HINT}", "")
        console.print(f"no baseline this run compares with, so none to protect ({first}); filing it", markup=False)
        return out
    console.print(f"replacing, as the suite's reference, {escape(g.baseline or '')} "
                  f"({escape(g.baseline_reason or '')})")
    for m in g.metrics:
        console.print(f"  {escape(m.name)}: {fmt(m.baseline)} → {fmt(m.run)} ({m.outcome}{direction_text(m.name)})")
    if g.exit_code == 1:
        out.append(f"against that baseline: {g.verdict}: {g.cause}")
    return out
