"""What every scoring tier does around its report: decide the gate (floors, then the baseline compare) before the
files are written, so each of them holds the verdict; then say it, last line on the console and first on stderr.

The baseline a run is compared with when none is named: the baseline of the run's own fingerprint when there is
one; otherwise the nearest baseline of the same tier and suite, the one whose documents and settings differ least
(the most recent among equals). A store with other distractors never stands in (the hard tier's numbers are not
the plain store's). The choice is always said.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig
from rich.markup import escape

from nomad_eval.base.case import Case
from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import reopened, seal
from nomad_eval.core.compare import SMALL_SUITE, Verdict
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.harness.system import differences, system_settings
from nomad_eval.report.baseline import Baseline, baseline_path, default_variant, document_distance, load_baseline
from nomad_eval.report.gate import (
    configured_floors,
    floor_rows,
    floor_spread,
    gate_record,
    run_floors,
    verdict_line,
    waterfall_text,
    write_junit,
)
from nomad_eval.report.schema import Gate, GateFloor, Report
from nomad_eval.tiers.notes import shown_before

NEXT_STEP = {
    "regression": "look at the questions named above; if the change is intended, promote this run with "
                  "promote.force=true after review",
    "floor broken": "the run is below an absolute floor (gate.fail_under); fix the cause before promoting",
    "not measured": "re-run so every question of the suite has a record; a missing value never passes",
    "golden out of date": "update or retire the goldens named above in this pull request (tier=corpus "
                          "action=review proposes the edits), or pass compare.stale=warn",
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
    stale = {q for status in ("gone", "relocated") for q in verdict.evidence.get(status, [])}
    if stale and rows and cases:
        rows = floors_without(rows, cases, stale)
    gate = gate_record(rows, verdict, baseline=str(path), baseline_reason=why)
    if not verdict.refused and cases:
        attribute_gate(cfg, gate, report, cases, base, verdict)
    return GateOutcome(gate, verdict, base.cases, cases, report.tier)


def floors_without(rows: list[GateFloor], cases: list[Case], stale: set[str]) -> list[GateFloor]:
    """The metric floors read over the questions whose goldens are up to date: an out-of-date golden measures a
    question the corpus no longer poses, so it breaks no floor (it has its own verdict). Judge floors stay."""
    questions = [q for q in questions_from_cases(cases) if q.id not in stale]
    out = []
    for f in rows:
        values = [v for q in questions if (v := q.values.get(f.metric)) is not None]
        if f.metric.startswith("judge.") or not values:
            out.append(f)
            continue
        (row,) = floor_rows({f.metric: sum(values) / len(values)}, {f.metric: f.floor}, spreads={
            f.metric: (len(values), None, None)})
        out.append(row.model_copy(update={"reason": f"{row.reason} ({len(stale)} out-of-date golden(s) left out)"}))
    return out


def attribute_gate(cfg: DictConfig, gate: Gate, report: Report, cases: list[Case], base: Baseline,
                   verdict: Verdict) -> None:
    """The flipped questions' causes into the gate record (tiers/attribute.py); a replay that fails is a note,
    never a failed compare (the verdict stands without it)."""
    from nomad_eval.tiers.attribute import explain, waterfall_rows
    from nomad_eval.tiers.settings import runtime

    try:
        found, notes = explain(cfg, runtime(cfg), report, cases, base, verdict)
    except Exception as exc:  # noqa: BLE001 -- after the measurement: a failed replay never fails the compare
        found, notes = None, [f"attribution not run: {type(exc).__name__}: {exc}"]
    gate.attribution = ([*found.lines, f"replayed the retrieval {found.replays} time(s)"] if found else []) + notes
    gate.waterfall = waterfall_rows(found) if found else {}


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
    # Only then: a compare of a run in a folder it may not write (a CI artifact) writes nothing there.
    junit = Path(str(cfg.compare.junit)) if cfg.compare.get("junit") else None
    if gate_files and junit is not None:
        with reopened(out) if not junit.is_absolute() or junit.parent == out else contextlib.nullcontext():
            write_gate_files(cfg, outcome, out)
    g = outcome.gate
    if g.baseline:
        console.print(f"baseline: {escape(g.baseline)} ({escape(g.baseline_reason or '')})")
    if outcome.verdict is not None:
        small = [w for w in outcome.verdict.warnings if w.startswith(SMALL_SUITE)]
        print_verdict(outcome.verdict, shown_before(Path(cfg.paths.data_dir), g.baseline or "", small))
        for line in g.attribution:
            console.print(f"flipped: {escape(line)}")
        for name, parts in g.waterfall.items():
            console.print(f"waterfall {escape(name)}: {escape(waterfall_text(parts))}")
        if outcome.tier == "generation" and outcome.cases and outcome.base_cases and not outcome.verdict.refused:
            print_cause_changes(outcome.base_cases, outcome.cases)
    for f in g.floors:
        console.print(("[red]floor broken:[/] " if f.broken else "floor holds: ") + escape(f.reason + floor_spread(f)))
    if g.exit_code:
        # "cannot tell" (run-to-run noise not measured) carries its own next step: the repeats that would tell.
        step = "" if "cannot tell:" in g.cause else NEXT_STEP.get(g.verdict, "")
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


PROMOTE_HINT = "run it once on the main branch, then `nomad-eval tier=promote promote.run=<run dir>` and commit " \
               "the baselines folder"


def system_of(report: Report) -> dict[str, str]:
    return report.system or system_settings(report.config, report.tier)


@dataclass(frozen=True)
class Candidate:
    path: Path
    baseline: Baseline
    documents: int | None   # documents that differ; None when either side did not record its documents
    settings: int           # settings that differ

    @property
    def distance(self) -> float:
        # A baseline without recorded documents ranks after every one that has them.
        return math.inf if self.documents is None else self.documents + self.settings


def find_baseline(root: Path, run: Report, variant: str | None) -> tuple[Path, Baseline, str]:
    """The baseline file, its contents, and why it was chosen (one line for the console and the record)."""
    ident = run.identity
    assert ident is not None
    own = baseline_path(root, ident.fingerprint, run.tier, variant)
    if own.exists():
        return own, load_baseline(own), f"the baseline of this run's own fingerprint {ident.fingerprint}"
    found: list[tuple[Path, Baseline]] = []
    for path in sorted(root.glob(f"*/{own.name}")):
        try:
            base = load_baseline(path)
        except NomadError:
            continue  # an unreadable baseline cannot be the nearest; naming it explicitly reports why
        if base.report.identity is not None and base.report.identity.suite == ident.suite:
            found.append((path, base))
    what = f"tier {run.tier}" + (f" ({variant})" if variant else "") + f", suite {ident.suite!r}"
    if not found:
        raise NomadError(f"no baseline for {what} in {root}: nothing to compare with yet; {PROMOTE_HINT}", 2)
    same_store = [(p, b) for p, b in found if b.report.identity and b.report.identity.distractors == ident.distractors]
    if not same_store:
        others = sorted({str(b.report.identity.distractors) for _, b in found if b.report.identity})
        raise NomadError(f"no baseline for {what} with this store (distractors {ident.distractors}); the suite's "
                         f"baselines use distractors {', '.join(others)}; {PROMOTE_HINT}", 2)
    # Most recent first (ISO timestamps sort as text), then the nearest: a stable sort keeps recent among equals.
    recent = sorted(same_store, key=lambda pb: pb[1].promoted_at, reverse=True)
    ranked = sorted((Candidate(p, b, document_distance(b.report, run), len(differences(system_of(b.report),
                                                                                        system_of(run))))
                     for p, b in recent), key=lambda c: c.distance)
    best = ranked[0]
    docs = "documents not recorded" if best.documents is None else f"{best.documents} document(s)"
    ties = sum(c.distance == best.distance for c in ranked) > 1
    return best.path, best.baseline, (f"no baseline for this fingerprint ({ident.fingerprint}); the nearest of "
                                      f"{len(ranked)} for {what}: {docs} and {best.settings} setting(s) differ"
                                      + (", the most recent among equals" if ties else ""))
