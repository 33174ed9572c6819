"""What every scoring tier does around its report: decide the gate (floors, then the baseline compare) before the
files are written, so each of them holds the verdict; then say it, last line on the console and first on stderr."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from rich.markup import escape

from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.core.compare import Verdict
from nomad_eval.report.baseline import default_variant, load_baseline
from nomad_eval.report.gate import configured_floors, floor_spread, gate_record, run_floors, verdict_line
from nomad_eval.report.junit import write_junit
from nomad_eval.report.schema import Gate, Report

NEXT_STEP = {
    "regression": "look at the questions named above; if the change is intended, promote this run with "
                  "promote.force=true after review",
    "floor broken": "the run is below an absolute floor (gate.fail_under); fix the cause before promoting",
    "not measured": "re-run so every question of the suite has a record; a missing value never passes",
    "too small to tell": "add questions (tier=plan says how many) or drop compare.strict",
}


@dataclass
class GateOutcome:
    gate: Gate
    verdict: Verdict | None = None
    base_cases: list[dict[str, Any]] | None = None
    cases: list[dict[str, Any]] | None = None
    tier: str = "retrieval"


def decide(cfg: DictConfig, report: Report, cases: list[dict[str, Any]] | None, *, floors: bool = True,
           compare: bool | None = None, baseline: Path | None = None) -> GateOutcome:
    """The run's gate record: its floors, and its compare with the named (`baseline`, else compare.baseline) or
    the chosen baseline."""
    rows = run_floors(report, configured_floors(cfg.gate)) if floors else []
    if not (cfg.compare.get("after_run") if compare is None else compare):
        return GateOutcome(gate_record(rows, None), tier=report.tier)
    from nomad_eval.tiers.baseline_choice import find_baseline
    from nomad_eval.tiers.compare import verdict_for

    try:
        named = baseline or (Path(str(cfg.compare.baseline)) if cfg.compare.get("baseline") else None)
        if named is not None:
            path, why = named, "named by compare.baseline"
            base = load_baseline(path)
        else:
            variant = cfg.compare.get("variant") or default_variant(report)
            path, base, why = find_baseline(Path(cfg.paths.baselines_dir), report,
                                            None if variant is None else str(variant))
        verdict = verdict_for(report, cases, base, cfg)
    except NomadError as exc:
        return GateOutcome(gate_record(rows, None, refused=str(exc)), tier=report.tier)
    return GateOutcome(gate_record(rows, verdict, baseline=str(path), baseline_reason=why), verdict, base.cases,
                       cases, report.tier)


def announce(cfg: DictConfig, outcome: GateOutcome, out: Path) -> int:
    """Print the compare and the floors, write junit.xml, and end with the verdict; returns the exit code."""
    from nomad_eval.tiers.compare import print_cause_changes, print_verdict

    g = outcome.gate
    if g.baseline:
        console.print(f"baseline: {escape(g.baseline)} ({escape(g.baseline_reason or '')})")
    if outcome.verdict is not None:
        print_verdict(outcome.verdict)
        if outcome.tier == "generation" and outcome.cases and outcome.base_cases and not outcome.verdict.refused:
            print_cause_changes(outcome.base_cases, outcome.cases)
    for f in g.floors:
        console.print(("[red]floor broken:[/] " if f.broken else "floor holds: ") + escape(f.reason + floor_spread(f)))
    if cfg.compare.get("junit"):
        junit = Path(str(cfg.compare.junit))
        write_junit(g, junit if junit.is_absolute() else out / junit)
    if g.exit_code:
        step = NEXT_STEP.get(g.verdict, "")
        err_console.print(f"{g.verdict}: {g.cause}" + (f"; next: {step}" if step else ""), markup=False,
                          highlight=False)
    style = "green" if g.exit_code == 0 else "red"
    console.print(f"[{style}]{escape(verdict_line(g))}[/]")
    return g.exit_code


def finish(cfg: DictConfig, out: Path, outcome: GateOutcome) -> int:
    from nomad_eval.tiers.browse import after

    after(cfg, out)  # refresh runs.html (it reads the verdict from report.json); never fails the run
    return announce(cfg, outcome, out)
