"""The gate's one entry: a run's floors, then its compare with the named or the chosen baseline, as one record
(report/schema.py's `Gate`), decided before the run's files are written so each of them holds the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nomad_eval.base.errors import NomadError
from nomad_eval.core.attribution import Attribution
from nomad_eval.gate.choose import find_baseline
from nomad_eval.gate.floors import floors_without, run_floors
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.record import gate_record
from nomad_eval.gate.settings import GateSettings
from nomad_eval.gate.store import default_variant
from nomad_eval.gate.verdict import verdict_for
from nomad_eval.records import Case
from nomad_eval.report.baseline import Baseline, load_baseline
from nomad_eval.report.schema import Gate, Report, WaterfallPart

# Names each flipped question's cause (run/attribute.py replays the retrieval): the attribution, or None with
# the reason in the notes.
Explain = Callable[[Report, list[Case], Baseline, Verdict], tuple[Attribution | None, list[str]]]


@dataclass
class GateOutcome:
    gate: Gate
    verdict: Verdict | None = None
    base_cases: list[Case] | None = None
    cases: list[Case] | None = None
    tier: str = "retrieval"


def decide(report: Report, cases: list[Case] | None, settings: GateSettings, *,
           explain: Explain | None = None) -> GateOutcome:
    """The run's gate record: its floors, and (settings.after_run) its compare with the named baseline
    (settings.baseline) or the chosen one; `explain` attributes the flipped questions."""
    rows = run_floors(report, settings.floors)
    if not settings.after_run:
        return GateOutcome(gate_record(rows, None), tier=report.tier)
    try:
        if settings.baseline is not None:
            path, why = settings.baseline, "named by compare.baseline"
            base = load_baseline(path)
        else:
            path, base, why = find_baseline(settings.baselines_dir, report,
                                            settings.variant or default_variant(report))
        verdict = verdict_for(report, cases, base, settings.compare)
    except NomadError as exc:
        return GateOutcome(gate_record(rows, None, refused=str(exc)), tier=report.tier)
    stale = {q for status in ("gone", "relocated") for q in verdict.evidence.get(status, [])}
    if stale and rows and cases:
        rows = floors_without(rows, cases, stale)
    gate = gate_record(rows, verdict, baseline=str(path), baseline_reason=why)
    if not verdict.refused and cases and explain is not None:
        attribute(gate, explain, report, cases, base, verdict)
    return GateOutcome(gate, verdict, base.cases, cases, report.tier)


def attribute(gate: Gate, explain: Explain, report: Report, cases: list[Case], base: Baseline,
              verdict: Verdict) -> None:
    """The flipped questions' causes into the gate record; a replay that fails is a note, never a failed compare
    (the verdict stands without it)."""
    try:
        found, notes = explain(report, cases, base, verdict)
    except Exception as exc:  # noqa: BLE001 -- after the measurement: a failed replay never fails the compare
        found, notes = None, [f"attribution not run: {type(exc).__name__}: {exc}"]
    gate.attribution = ([*found.lines, f"replayed the retrieval {found.replays} time(s)"] if found else []) + notes
    gate.waterfall = waterfall_rows(found) if found else {}


def waterfall_rows(found: Attribution) -> dict[str, list[WaterfallPart]]:
    return {m: [WaterfallPart(change=p.change, value=p.value, questions=list(p.questions)) for p in parts]
            for m, parts in found.waterfall.items()}
