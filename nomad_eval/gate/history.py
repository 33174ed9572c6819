"""A question's history: its draws in the project's earlier runs of the same golden and system, read from their
run folders for the run-to-run noise of a question asked once on both sides (core/noise.py's `History`).

An earlier run counts when its folder is sealed and intact (base/runfolder.py: a manifest whose files match),
it finished (status ok) and its cases.jsonl holds every case its report counts; when it measured the same task
with the same system as the baseline (the same tier, the same identity but for the goldens file's hash, the same
system settings but for how many draws and which: `repeats`, `seed`); and it is neither the run under test nor
the baseline's own run, whose draws are already one side of the pair. Of such a run, a question counts when its
golden has the baseline's judgement hash (subject.goldens; without them, the goldens file's hash must match).
The baseline's system, not the run's: the gate tests whether the run is the baseline's system, so that system's
draws are the noise an unchanged run would show. Folders are found as the run browser finds them (browse.roots),
newest report first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import MANIFEST, READ, problem, reports_under
from nomad_eval.base.secrets import redact
from nomad_eval.core.noise import History
from nomad_eval.core.questions import Question, questions_from_cases
from nomad_eval.gate.changes import system_of
from nomad_eval.records import Case
from nomad_eval.report.baseline import Baseline, read_cases
from nomad_eval.report.io import read_report
from nomad_eval.report.renamed import renamed_cases
from nomad_eval.report.schema import Report

# Settings that say how many draws a run takes of its system, or which ones, not what the system is.
DRAWS = ("repeats", "seed")


def run_key(report: Report) -> tuple[str | None, ...] | None:
    """What tells one run from another of the same task and system: when it began, on which code; None when the
    report does not say (such a run is never taken for history: it may be the run under test)."""
    p = report.provenance
    return None if p is None else (p.created, p.git_commit, p.git_diff, p.project_commit)


def _settings(report: Report) -> dict[str, str]:
    system = system_of(report)
    return {k: v for k, v in redact(system, system).items() if k.split(".")[0] not in DRAWS}


def same_system(earlier: Report, base: Report) -> bool:
    """The same task (tier, identity but for the goldens file's hash) and the same system settings but for the
    number and seed of the draws."""
    if earlier.tier != base.tier or earlier.identity is None or base.identity is None:
        return False
    if earlier.identity.model_dump(exclude={"goldens_hash"}) != base.identity.model_dump(exclude={"goldens_hash"}):
        return False
    return _settings(earlier) == _settings(base)


def _looks_alike(path: Path, base: Report) -> bool:
    """A cheap first look at a report.json (plain JSON, not validated): the baseline's tier and corpus fingerprint."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    ident = raw.get("identity") if isinstance(raw, dict) else None
    return (isinstance(ident, dict) and raw.get("tier") == base.tier and base.identity is not None
            and ident.get("fingerprint") == base.identity.fingerprint and ident.get("mode") == base.identity.mode)


def _earlier_run(folder: Path, base: Report, skip: set[tuple[str | None, ...]]) -> list[Case] | None:
    """The folder's cases when it is an earlier run whose draws count (module docstring), else None."""
    if not (folder / MANIFEST).exists() or problem(folder, hash_only=READ) is not None:
        return None
    try:
        report = read_report(folder / "report.json")
        key = run_key(report)
        if report.status != "ok" or key is None or key in skip or not same_system(report, base):
            return None
        cases = renamed_cases(read_cases(folder / "cases.jsonl"))
    except NomadError:  # unreadable or not a run of ours: not history, and not this compare's concern
        return None
    expected = report.counts.get("cases")
    if expected is not None and expected != len(cases):
        return None
    return _same_goldens(cases, report, base)


def _same_goldens(cases: list[Case], earlier: Report, base: Report) -> list[Case]:
    """The cases whose golden is judged as the baseline's: the same judgement hash, or (either side without the
    per-golden hashes) the same goldens file."""
    mine = earlier.subject.goldens if earlier.subject else {}
    theirs = base.subject.goldens if base.subject else {}
    if not mine or not theirs:
        same = earlier.identity is not None and base.identity is not None \
            and earlier.identity.goldens_hash == base.identity.goldens_hash
        return cases if same else []
    return [c for c in cases if c.id in theirs and mine.get(c.id) == theirs[c.id]]


def question_history(roots: Sequence[Path], base: Baseline, run: Report, *, scan: int, most: int,
                     folders: Iterable[Path] = ()) -> History:
    """The earlier draws of the baseline's questions: from at most `most` earlier runs (newest first) among the
    `scan` newest reports under `roots`. `folders`: run folders never to read (the run under test's, when known)."""
    skip = {k for k in (run_key(run), run_key(base.report)) if k is not None}
    src = Path(base.promoted_from)  # the baseline's own run: a folder, or its report.json
    never = {p.resolve() for p in [*folders, src, *([src.parent] if src.name == "report.json" else [])]}
    questions: dict[str, list[Question]] = {}
    runs = 0
    for path in reports_under(roots, scan):
        if runs >= most:
            break
        if path.parent in never or not _looks_alike(path, base.report):
            continue
        cases = _earlier_run(path.parent, base.report, skip)
        if not cases:
            continue
        runs += 1
        for q in questions_from_cases(cases):
            questions.setdefault(q.key, []).append(q)
    return History(questions, runs)
