"""tier=compare: judge a run against its baseline (exit 0/1/2; the gate, nomad_eval/gate/, decides), or merge run
directories into one table."""

from __future__ import annotations

import glob
from pathlib import Path

from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.sweep import sweep_settings
from nomad_eval.report.baseline import load_run
from nomad_eval.report.merge import collect, sweep_id
from nomad_eval.run.finish import announce, decide


def merge_runs(config: RunConfig) -> int:
    # A pattern that matches nothing stays as given, and is named below when nothing is found.
    dirs = [Path(hit) for p in map(str, config.compare.runs) for hit in sorted(glob.glob(p)) or [p]]
    # A sweep directory given whole: only its latest sweep's jobs, never stale ones from an earlier sweep.
    chosen = []
    for d in dirs:
        if (d / "report.json").exists():
            chosen.append(d)
        elif d.is_dir():
            chosen.extend(collect([x for x in d.iterdir() if x.is_dir()], sweep_id(d)))
    if not chosen:
        raise NomadError(f"no run directories with a report.json in {[str(d) for d in dirs]}", 2)
    out = Path(config.compare.out) if config.compare.out else chosen[0].parent
    from nomad_eval.report.sweep_summary import summarize_sweep

    summarize_sweep(chosen, out, sweep_settings(config), quiet=config.quiet)
    return 0


def compare_run(path: Path, config: RunConfig, baseline: Path | None = None) -> int:
    """Compare an existing run (a folder or its report.json) with `baseline`, or the one compare would choose."""
    report, cases = load_run(path)
    if report.status != "ok" or report.identity is None:
        raise NomadError(f"{path}: the run failed ({report.error}); nothing to compare; re-run it", 2)
    outcome = decide(config, report, cases, floors=False, compare=True, baseline=baseline)
    return announce(config, outcome, path if path.is_dir() else path.parent)


def run(config: RunConfig) -> int:
    if config.compare.runs:
        return merge_runs(config)
    if not config.compare.run:
        raise NomadError("tier=compare needs compare.run=<run dir or report.json> "
                         "(or compare.runs=[...] to merge runs into one table)", 2)
    return compare_run(Path(config.compare.run), config)
