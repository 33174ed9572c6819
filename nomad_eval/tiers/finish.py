"""What every scoring tier does around its report: decide the gate (floors, then the baseline compare) before the
files are written, so each of them holds the verdict; then say it, last line on the console and first on stderr."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig
from rich.markup import escape

from nomad_eval.base.case import Case
from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import reseal, seal
from nomad_eval.core.compare import Verdict
from nomad_eval.report.baseline import default_variant, load_baseline
from nomad_eval.report.gate import configured_floors, floor_spread, gate_record, run_floors, verdict_line, write_junit
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
    base_cases: list[Case] | None = None
    cases: list[Case] | None = None
    tier: str = "retrieval"


def decide(cfg: DictConfig, report: Report, cases: list[Case] | None, *, floors: bool = True,
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


def write_gate_files(cfg: DictConfig, outcome: GateOutcome, out: Path) -> Path | None:
    """junit.xml, when asked for: relative to the run folder (or the compared run's); returns where."""
    if not cfg.compare.get("junit"):
        return None
    junit = Path(str(cfg.compare.junit))
    target = junit if junit.is_absolute() else out / junit
    write_junit(outcome.gate, target)
    return target


def announce(cfg: DictConfig, outcome: GateOutcome, out: Path, *, gate_files: bool = True) -> int:
    """Print the compare and the floors, write junit.xml (unless the caller did), and end with the verdict;
    returns the exit code."""
    from nomad_eval.tiers.compare import print_cause_changes, print_verdict

    # A compare writing junit.xml into a finished run's folder seals it again: its reader checked it just before.
    if gate_files and (junit := write_gate_files(cfg, outcome, out)) and junit.parent == out:
        reseal(out)
    g = outcome.gate
    if g.baseline:
        console.print(f"baseline: {escape(g.baseline)} ({escape(g.baseline_reason or '')})")
    if outcome.verdict is not None:
        print_verdict(outcome.verdict)
        if outcome.tier == "generation" and outcome.cases and outcome.base_cases and not outcome.verdict.refused:
            print_cause_changes(outcome.base_cases, outcome.cases)
    for f in g.floors:
        console.print(("[red]floor broken:[/] " if f.broken else "floor holds: ") + escape(f.reason + floor_spread(f)))
    if g.exit_code:
        step = NEXT_STEP.get(g.verdict, "")
        err_console.print(f"{g.verdict}: {g.cause}" + (f"; next: {step}" if step else ""), markup=False,
                          highlight=False)
    if (html := out / "report.html").is_file():  # named before the verdict, which stays the last line for CI
        console.print(f"report: {html}", markup=False, highlight=False)
    style = "green" if g.exit_code == 0 else "red"
    console.print(f"[{style}]{escape(verdict_line(g))}[/]")
    return g.exit_code


def finish(cfg: DictConfig, out: Path, outcome: GateOutcome) -> int:
    """Every result written: the manifest goes last, so a folder with a matching manifest holds one whole run."""
    from nomad_eval.tiers.browse import after

    write_gate_files(cfg, outcome, out)
    seal(out)
    after(cfg, out)  # refresh runs.html (it reads the verdict from report.json); never fails the run
    return announce(cfg, outcome, out, gate_files=False)
