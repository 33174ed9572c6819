"""runs.html over every run under the output folders: rebuilt by tier=browse, and after each run and sweep.

Cheap by construction: only report.json files are read (the most recent `browse.limit`), plus the cases.jsonl of
runs small enough to compare per question, within a total budget. After a run or sweep the rebuild must never
cost the run: any failure is one warning line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import ValidationError

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import first_error
from nomad_eval.base.runfolder import problem, reports_under
from nomad_eval.config.sections import BrowseKeys
from nomad_eval.harness.rundir import multirun
from nomad_eval.records import Case, decode
from nomad_eval.report.browser import MAX_CASES, RunEntry, build_page, headline_k, questions, run_entry
from nomad_eval.report.io import write_atomic

HASHED_CASES_BYTES = 64 * 2**20  # far above what MAX_CASES cases take: a larger file is never read by the page
QUESTION_BUDGET = 50_000  # per-question rows embedded over all runs, newest first: the page stays openable


def settings(b: BrowseKeys) -> tuple[list[Path], Path, int]:
    return [Path(str(r)) for r in b.roots], Path(str(b.out)), int(b.limit)


def _cases(path: Path) -> tuple[list[Case] | None, str]:
    """A run's cases.jsonl as records, read by the codec (older files too: their missing fields take the
    defaults), or why not: a line that is not a case record withholds the run's questions, naming the line."""
    rows: list[Case] = []
    try:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if len(rows) >= MAX_CASES:
                    return None, f"more than {MAX_CASES} cases"
                try:
                    rows.append(decode(json.loads(line)))
                except ValidationError as exc:  # a ValueError: caught before the file is called unreadable
                    return None, f"cases.jsonl line {n}: not a case record: {first_error(exc)}"
    except FileNotFoundError:
        return None, "no cases.jsonl"
    except (OSError, ValueError) as exc:
        return None, f"unreadable cases.jsonl ({type(exc).__name__})"
    return rows, ""


def _read_here(folder: Path) -> tuple[str, ...]:
    try:
        small = (folder / "cases.jsonl").stat().st_size <= HASHED_CASES_BYTES
    except OSError:
        small = True  # missing: the manifest check names it
    return ("report.json", "cases.jsonl") if small else ("report.json",)


def entries(reports: list[Path], page_dir: Path) -> tuple[list[RunEntry], list[str]]:
    """The runs the page lists, and why each folder it skips was skipped: a file that is not a report, or a
    folder whose files do not match its manifest (named)."""
    out: list[RunEntry] = []
    skipped: list[str] = []
    budget = QUESTION_BUDGET
    for p in reports:
        # Only the files the page reads are hashed, the rest checked by size, so a rebuild stays cheap; a
        # cases.jsonl too large for the page is not read, so not hashed either.
        if (why := problem(p.parent, hash_only=_read_here(p.parent))) is not None:
            skipped.append(why)
            continue
        try:
            report = json.loads(p.read_text(encoding="utf-8"))
            mtime = p.stat().st_mtime
        except (OSError, ValueError):
            skipped.append(f"{p}: unreadable")
            continue
        if not isinstance(report, dict) or "tier" not in report:
            skipped.append(f"{p}: not a report")
            continue
        html_file = p.parent / "report.html"
        link = os.path.relpath(html_file, page_dir) if html_file.exists() else ""
        # Relative to the working directory when inside it; else the absolute path reads better.
        folder = str(p.parent.relative_to(Path.cwd()) if p.parent.is_relative_to(Path.cwd()) else p.parent)
        e = run_entry(report, link, folder, mtime)
        if budget <= 0:
            e.why_no_questions = "the page's per-question budget is spent on newer runs"
        else:
            cases, why = _cases(p.parent / "cases.jsonl")
            e.questions = questions(cases, e.tier, headline_k(report)) if cases is not None else None
            e.why_no_questions = why or ("" if e.questions is not None else f"tier {e.tier} has no questions")
            budget -= len(e.questions or [])
        out.append(e)
    out.sort(key=lambda e: e.time, reverse=True)
    return out, skipped


def rebuild(roots: list[Path], out: Path, limit: int) -> tuple[Path, int]:
    """Write the page to `out`; returns it and the number of runs listed."""
    out = out.resolve()
    runs, skipped = entries(reports_under(roots, limit), out.parent)
    note = (f"{len(runs)} runs under {', '.join(str(r) for r in roots)} (the most recent {limit} at most)"
            + (f"; {len(skipped)} skipped: {'; '.join(skipped[:5])}{' …' if len(skipped) > 5 else ''}"
               if skipped else ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, build_page(runs, note=note))
    return out, len(runs)


def after(browse: BrowseKeys, where: Path, sweep: bool = False) -> None:
    """Refresh the page after a run (not a sweep's job: the sweep refreshes once at its end) or sweep whose
    folder lies under the browsed roots; a run written elsewhere (a test's tmp folder) leaves the page alone."""
    try:
        if not browse.after_run or (not sweep and multirun()):
            return
        roots, out, limit = settings(browse)
        if any(where.resolve().is_relative_to(r.resolve()) for r in roots):
            rebuild(roots, out, limit)
    except Exception as exc:  # the run's results are written; a page that fails to refresh must not cost them
        err_console.print(f"warning: the run browser was not refreshed: {type(exc).__name__}: {exc}",
                          markup=False, highlight=False)
