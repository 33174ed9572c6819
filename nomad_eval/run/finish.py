"""What every scoring tier does around its report: decide the gate (nomad_eval/gate/: floors, then the baseline
compare) before the files are written, so each of them holds the verdict; then say it, last line on the console
and first on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nomad_eval.base.runfolder import seal
from nomad_eval.config import RunConfig
from nomad_eval.config.gating import gate_settings
from nomad_eval.core.attribution import Attribution
from nomad_eval.gate.announce import announce as announce_gate
from nomad_eval.gate.compare import SMALL_SUITE
from nomad_eval.gate.decision import Explain, GateOutcome
from nomad_eval.gate.decision import decide as gate_decide
from nomad_eval.gate.junit import write_gate_files
from nomad_eval.gate.outcome import Verdict
from nomad_eval.records import Case
from nomad_eval.report.baseline import Baseline
from nomad_eval.report.schema import Report
from nomad_eval.run.notes import shown_before


def decide(config: RunConfig, report: Report, cases: Sequence[Case] | None, *, floors: bool = True,
           compare: bool | None = None, baseline: Path | None = None) -> GateOutcome:
    """The run's gate record: its floors, and its compare with the named (`baseline`, else compare.baseline) or
    the chosen baseline."""
    settings = gate_settings(config)
    settings = replace(settings, floors=settings.floors if floors else {},
                       after_run=settings.after_run if compare is None else compare,
                       baseline=baseline or settings.baseline)
    return gate_decide(report, None if cases is None else list(cases), settings, explain=explainer(config))


def explainer(config: RunConfig) -> Explain:
    """The flipped questions' causes by replay (run/attribute.py), for the gate to record."""
    def replayed(report: Report, cases: list[Case], base: Baseline, verdict: Verdict
                 ) -> tuple[Attribution | None, list[str]]:
        from nomad_eval.config.settings import runtime
        from nomad_eval.run.attribute import explain

        return explain(config, runtime(config), report, cases, base, verdict)

    return replayed


def announce(config: RunConfig, outcome: GateOutcome, out: Path, *, gate_files: bool = True) -> int:
    """Print the compare and the floors, write junit.xml (unless the caller did), and end with the verdict;
    returns the exit code."""
    small = [w for w in outcome.verdict.warnings if w.startswith(SMALL_SUITE)] if outcome.verdict else []
    shown = shown_before(Path(config.paths.data_dir), outcome.gate.baseline or "", small) if outcome.verdict else ()
    return announce_gate(outcome, out, junit=gate_settings(config).junit, shown=shown, gate_files=gate_files)


def finish(config: RunConfig, out: Path, outcome: GateOutcome) -> int:
    """Every result written: the manifest goes last, so a folder with a matching manifest holds one whole run."""
    from nomad_eval.run.runs_page import after

    write_gate_files(outcome.gate, out, gate_settings(config).junit)
    seal(out)
    after(config.browse, out)  # refresh runs.html (it reads the verdict from report.json); never fails the run
    return announce(config, outcome, out, gate_files=False)
