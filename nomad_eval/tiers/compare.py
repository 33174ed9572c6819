"""tier=compare: judge a run against its baseline (exit 0/1/2), or merge run directories into one table."""

from __future__ import annotations

import glob
from pathlib import Path

from omegaconf import DictConfig
from rich.markup import escape
from rich.table import Table

from nomad_eval.compare.baseline import baseline_path, default_variant, load_baseline, load_run
from nomad_eval.compare.diff import Verdict, compare
from nomad_eval.compare.junit import write_junit
from nomad_eval.console import console
from nomad_eval.errors import NomadError
from nomad_eval.report.markdown import fmt
from nomad_eval.report.merge import collect, merge, sweep_id, write_summary


def _expand(patterns: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in patterns:
        hits = sorted(glob.glob(p)) or [p]
        out.extend(Path(h) for h in hits)
    return out


def merge_runs(cfg: DictConfig) -> int:
    dirs = _expand([str(p) for p in cfg.compare.runs])
    # A sweep directory given whole: only its latest sweep's jobs, never stale ones from an earlier sweep.
    chosen = []
    for d in dirs:
        if (d / "report.json").exists():
            chosen.append(d)
        elif d.is_dir():
            chosen.extend(collect([x for x in d.iterdir() if x.is_dir()], sweep_id(d)))
    if not chosen:
        raise NomadError(f"no run directories with a report.json in {[str(d) for d in dirs]}", 2)
    out = Path(cfg.compare.out) if cfg.compare.get("out") else chosen[0].parent
    write_summary(merge(chosen), out, quiet=bool(cfg.quiet))
    return 0


def print_verdict(v: Verdict) -> None:
    if v.refused:
        for line in v.refused:
            console.print(f"[red]not comparable:[/] {escape(line)}")
        return
    t = Table(title="compare against baseline")
    for col in ("metric", "baseline", "run", "delta", "tolerance", "95% CI of delta", "verdict"):
        t.add_column(col)
    for d in v.deltas:
        ci = "—" if d.ci is None else f"[{d.ci[0]:+.4f}, {d.ci[1]:+.4f}]"
        delta = "—" if d.delta is None else f"{d.delta:+.4f}"
        t.add_row(d.name, fmt(d.baseline), fmt(d.current), delta, d.tolerance, ci,
                  "[red]REGRESSED[/]" if d.regressed else "ok")
    console.print(t)
    for d in v.regressions:
        console.print(f"[red]regressed:[/] {d.name} {fmt(d.baseline)} -> {fmt(d.current)}")
    if v.newly_failing:
        console.print(f"questions that went from pass to fail: {', '.join(v.newly_failing)}")
    if v.unstable:
        console.print(f"unstable questions (outcome flips across repeats; kept out of the gate): "
                      f"{', '.join(v.unstable)}")
    console.print("verdict: " + ("[red]REGRESSION[/]" if v.regressions else "[green]no regression[/]"))


def judge(run: Path, baseline: Path | None, cfg: DictConfig, junit_base: Path | None = None) -> int:
    report, cases = load_run(run)
    if report.status != "ok" or report.identity is None:
        raise NomadError(f"{run}: the run failed ({report.error}); nothing to compare", 2)
    variant = cfg.compare.get("variant") or default_variant(report)
    path = baseline or baseline_path(Path(cfg.paths.baselines_dir), report.identity.fingerprint, report.tier,
                                     variant)
    base = load_baseline(path)
    verdict = compare(report, base.report, cases, base.cases or None, int(cfg.compare.resamples))
    console.print(f"baseline: {path}")
    print_verdict(verdict)
    if cfg.compare.get("junit"):
        junit = Path(cfg.compare.junit)
        write_junit(verdict, junit if junit.is_absolute() or junit_base is None else junit_base / junit)
    return verdict.exit_code


def run(cfg: DictConfig) -> int:
    if cfg.compare.get("runs"):
        return merge_runs(cfg)
    if not cfg.compare.get("run"):
        raise NomadError("tier=compare needs compare.run=<run dir or report.json> "
                         "(or compare.runs=[...] to merge runs into one table)", 2)
    base = Path(cfg.compare.baseline) if cfg.compare.get("baseline") else None
    return judge(Path(cfg.compare.run), base, cfg)
