"""The gate said on the console: what changed since the baseline, the compared questions, the table, each failing
metric with its questions, the floors, and last the verdict line (the next step on stderr when it fails)."""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from nomad_eval.base.console import console, err_console
from nomad_eval.base.runfolder import reopened
from nomad_eval.core.causes import cause_changes
from nomad_eval.gate.decision import GateOutcome
from nomad_eval.gate.junit import write_gate_files
from nomad_eval.gate.outcome import Verdict
from nomad_eval.gate.record import metric_row
from nomad_eval.records import Case
from nomad_eval.report.gate_view import (
    GATE_COLUMNS,
    direction_text,
    floor_spread,
    gate_cells,
    verdict_line,
    waterfall_text,
)

OUTCOME_STYLE = {"regression": "red", "golden out of date": "red", "not measured": "red", "too small to tell": "red",
                 "within tolerance": "green", "not gated": "dim"}

NEXT_STEP = {
    "regression": "look at the questions named above; if the change is intended, promote this run with "
                  "promote.force=true after review",
    "floor broken": "the run is below an absolute floor (gate.fail_under); fix the cause before promoting",
    "not measured": "re-run so every question of the suite has a record; a missing value never passes",
    "golden out of date": "update or retire the goldens named above in this pull request (tier=corpus "
                          "action=review proposes the edits), or pass compare.stale=warn",
    "too small to tell": "add questions (tier=plan says how many) or drop compare.strict",
}


QUESTION_NOTES = {"added": "scored, not gated", "changed": "judgement changed, not gated",
                  "removed": "no longer in the suite", "not measured": "in the suite, no record: fails"}


def print_verdict(v: Verdict, shown: Collection[str] = ()) -> None:
    """The compare on the console; warnings in `shown` were printed before in this project state (see
    run/notes.py) and are left to the report."""
    if v.refused:
        for line in v.refused:
            console.print(f"[red]not comparable:[/] {escape(line)}")
        return
    _print_changes(v)
    _print_table(v)
    for m in v.metrics:
        if m.gated and m.outcome != "within tolerance":
            values = "" if m.baseline is None or m.current is None else \
                f" {m.baseline:.4f} → {m.current:.4f}{direction_text(m.name)}"
            console.print(f"[{OUTCOME_STYLE[m.outcome]}]{m.outcome}:[/] {escape(m.name)}{values}: {escape(m.reason)}")
            if m.worse:
                console.print(f"  questions: {escape(_listed(list(m.worse), 20))}")
    for line in v.stale:
        console.print(f"[{'yellow' if v.stale_warn else 'red'}]golden out of date:[/] {escape(line)}")
    for w in v.warnings:
        if w not in shown:
            console.print(f"[yellow]warning:[/] {escape(w)}")
    if v.newly_failing:
        console.print(f"questions that went from pass to fail: {', '.join(v.newly_failing)}")


def _listed(items: list[str], limit: int) -> str:
    return ", ".join(items[:limit]) + (" …" if len(items) > limit else "")


def _print_changes(v: Verdict) -> None:
    if v.differences:
        console.print(f"what changed since the baseline ({len(v.differences)}; baseline → run):")
        for line in v.differences:
            console.print(f"  {escape(line)}")
    else:
        console.print("what changed since the baseline: nothing in the documents or settings")
    for label, keys in v.questions.listing().items():
        note = QUESTION_NOTES.get(label)
        console.print(f"questions {label} ({len(keys)}{'; ' + note if note else ''}): {escape(_listed(keys, 12))}")


def _print_table(v: Verdict) -> None:
    t = Table(*GATE_COLUMNS, title=f"compare against baseline: {v.common} questions in common"
              + (", resampled by source document" if v.clustered else ""))
    shown = [m for m in v.metrics if m.gated or m.outcome == "not measured"]
    for m in shown:
        *cells, outcome = gate_cells(metric_row(m))
        t.add_row(*map(escape, cells), f"[{OUTCOME_STYLE.get(outcome, '')}]{outcome}[/]")
    console.print(t, overflow="fold")
    if len(shown) < len(v.metrics):
        console.print(f"{len(v.metrics) - len(shown)} metric(s) not gated: in the run's report.md and report.html")


def print_cause_changes(base_cases: list[Case], cases: list[Case]) -> None:
    """Questions whose failure cause changed (core/causes.py); a baseline without causes is said so, not guessed."""
    changes, note = cause_changes(base_cases, cases)
    if note:
        console.print(f"failure causes: {escape(note)}")
        return
    if not changes:
        console.print("failure causes: no question's cause changed")
        return
    console.print(f"failure causes changed for {len(changes)} question(s) (baseline → run; — = passed):")
    for ch in changes:
        console.print(f"  {escape(ch.key)}: {ch.before or '—'} → {ch.after or '—'}")


def announce(outcome: GateOutcome, out: Path, *, junit: Path | None, shown: Collection[str] = (),
             gate_files: bool = True) -> int:
    """Print the compare and the floors, write junit.xml (unless the caller did), and end with the verdict;
    returns the exit code. `shown`: the small-suite warnings printed before in this project state."""
    if gate_files and junit is not None:
        _write_into(out, outcome, junit)
    g = outcome.gate
    if g.baseline:
        console.print(f"baseline: {escape(g.baseline)} ({escape(g.baseline_reason or '')})")
    if outcome.verdict is not None:
        _print_compare(outcome, outcome.verdict, shown)
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


def _write_into(out: Path, outcome: GateOutcome, junit: Path) -> None:
    """junit.xml for a compare of a finished run. Written into that run's folder, it seals the folder again: its
    reader checked it just before. Only then: a compare of a run in a folder it may not write (a CI artifact)
    writes nothing there."""
    with reopened(out) if not junit.is_absolute() or junit.parent == out else contextlib.nullcontext():
        write_gate_files(outcome.gate, out, junit)


def _print_compare(outcome: GateOutcome, verdict: Verdict, shown: Collection[str]) -> None:
    """The compare, the flipped questions' causes and, for generation, the questions whose failure cause changed."""
    g = outcome.gate
    print_verdict(verdict, shown)
    for line in g.attribution:
        console.print(f"flipped: {escape(line)}")
    for name, parts in g.waterfall.items():
        console.print(f"waterfall {escape(name)}: {escape(waterfall_text(parts))}")
    if outcome.tier == "generation" and outcome.cases and outcome.base_cases and not verdict.refused:
        print_cause_changes(outcome.base_cases, outcome.cases)
