"""Rank a sweep's configurations against a reference job with paired tests, corrected for testing many.

Twenty configurations as good as the reference crown a chance "winner" at raw p < 0.05 in about one sweep in
five (bench/stats_sim.py); a correction across the configurations (Holm by default, Benjamini-Hochberg on
request) keeps that under 5%, so a difference marked real is one worth acting on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from rich.table import Table

from nomad_eval.base.atomic import read_jsonl, write_atomic
from nomad_eval.base.case import Case
from nomad_eval.base.console import console, err_console
from nomad_eval.base.runfolder import READ, problem
from nomad_eval.core.questions import Question, questions_from_cases, stable
from nomad_eval.core.ranking import Ranked, rank_against_reference
from nomad_eval.core.stats import Correction
from nomad_eval.metrics.registry import Tier, headline_names, spec_for


def _load(d: Path, tier: str | None = None) -> tuple[dict[str, Any], list[Question]] | None:
    """A finished job's report and questions; None if it failed, or is not of `tier` (then its cases go unread)."""
    found = _job(d, tier)
    return None if isinstance(found, str) else found


def _job(d: Path, tier: str | None = None) -> tuple[dict[str, Any], list[Question]] | str:
    """A finished job's report and questions, or why it is left out of the ranking."""
    if (damaged := problem(d, hash_only=READ)) is not None:
        return damaged
    report = json.loads((d / "report.json").read_text())
    if tier not in (None, report.get("tier")):
        return f"tier {report.get('tier')}"
    if report.get("status") != "ok":
        return f"the job failed: {report.get('error')}"
    if not (d / "cases.jsonl").exists():
        return f"{d / 'cases.jsonl'} is missing"
    # As this sweep's job wrote them (the manifest check above): not checked again, which every job would pay.
    return report, questions_from_cases(cast(list[Case], read_jsonl(d / "cases.jsonl")))


def rank_sweep(jobs: list[Path], out: Path, cfg: Any, quiet: bool = False) -> dict[str, Any] | None:
    found = {d.name: _job(d) for d in jobs}
    loaded = {n: x for n, x in found.items() if not isinstance(x, str)}
    # A job that is not ranked is named with the reason: a configuration missing from the ranking must not look
    # as if it had been tested and lost.
    left_out = {n: x for n, x in found.items() if isinstance(x, str)}
    if not quiet:
        for name, why in left_out.items():
            err_console.print(f"ranking: {name} left out: {why}", markup=False, highlight=False)
    if len(loaded) < 2:
        return None
    cmp = cfg.compare
    ref = _reference(list(loaded), str(cmp.reference or next(iter(loaded))))
    ref_report, ref_q = loaded[ref]
    tier: Tier = "generation" if ref_report.get("tier") == "generation" else "retrieval"
    modes = sorted({q.mode for q in ref_q if q.mode})
    method = _correction(cmp)
    unstable = {q.key for _, qs in loaded.values() for q in qs if q.unstable}
    result: dict[str, Any] = {"reference": ref, "correction": method, "metrics": {}, "left_out": left_out}
    for metric in headline_names(tier, int(cmp.headline_k), modes):
        per_job = {n: _values(qs, metric, unstable) for n, (_, qs) in loaded.items()}
        block = _rank_metric(metric, per_job, ref, method, int(cfg.seed))
        if block is not None:
            result["metrics"][metric] = block
    write_atomic(out / "ranking.json", json.dumps(result, indent=1))
    write_atomic(out / "ranking.md", _markdown(result))
    if not quiet:
        _print(result)
    return result


def _correction(cmp: Any) -> Correction:
    """compare.correction: Benjamini-Hochberg when asked for ("bh" or "fdr_bh"), else Holm."""
    return "fdr_bh" if str(cmp.correction) in ("bh", "fdr_bh") else "holm"


def _reference(names: list[str], wanted: str) -> str:
    """The job named `wanted`, else the first whose name starts with `wanted_`, else the first job."""
    if wanted in names:
        return wanted
    return next((n for n in names if n.split("_", 1)[0] == wanted), names[0])


def _values(questions: list[Question], metric: str, unstable: set[str]) -> dict[str, float | None]:
    return {q.key: q.values.get(metric) for q in stable(questions) if q.key not in unstable}


def _rank_metric(metric: str, per_job: dict[str, dict[str, float | None]], ref: str, method: Correction, seed: int
                 ) -> dict[str, Any] | None:
    """One metric's ranking block, {"n", "rows"}; None when the registry lacks it or fewer than 2 questions pair."""
    spec = spec_for(metric)
    if spec is None:
        return None
    sign = 1.0 if spec.direction == "higher" else -1.0
    # Pair on the questions every job measured, so each configuration is tested on the same set.
    keys = [k for k, v in per_job[ref].items() if v is not None and all(
        per_job[n].get(k) is not None for n in per_job)]
    if len(keys) < 2:
        return None
    # Oriented so that higher is better. A lower-is-better 0/1 metric is turned into its complement rather
    # than negated, so it stays 0/1 for the exact binary test; the deltas are negated either way.
    offset = 1.0 if spec.binary and sign < 0 else 0.0
    reference = [offset + sign * float(per_job[ref][k] or 0.0) for k in keys]
    configs = {n: [offset + sign * float(per_job[n][k] or 0.0) for k in keys] for n in per_job if n != ref}
    ranked = rank_against_reference(reference, configs, binary=spec.binary, method=method, seed=seed)
    return {"n": len(keys), "rows": [_row(r, sign) for r in ranked]}


def _row(r: Ranked, sign: float) -> dict[str, Any]:
    """A ranked configuration in the metric's own direction: the delta and interval turned back by `sign`."""
    return {"job": r.name, "delta": sign * r.delta, "low": None if r.interval is None else sign * (
        r.interval.low if sign > 0 else r.interval.high),
        "high": None if r.interval is None else sign * (r.interval.high if sign > 0 else r.interval.low),
        "p": r.p_value, "p_adjusted": r.p_adjusted, "real": r.real}


def _markdown(result: dict[str, Any]) -> str:
    lines = [f"# Configurations against {result['reference']}", "",
             f"Paired tests on the same questions, {result['correction']} correction across configurations; "
             "*real* means the difference survives it.", ""]
    left_out = result.get("left_out") or {}
    lines += [f"Left out: {name}: {why}" for name, why in left_out.items()] + ([""] if left_out else [])
    for metric, block in result["metrics"].items():
        lines += [f"## {metric} (n={block['n']})", "", "| job | delta | 95% CI | p | p adjusted | real |",
                  "|---|---|---|---|---|---|"]
        for r in block["rows"]:
            ci = "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"
            lines.append(f"| {r['job']} | {r['delta']:+.4f} | {ci} | {r['p']:.3g} | {r['p_adjusted']:.3g} | "
                         f"{'yes' if r['real'] else 'no'} |")
        lines.append("")
    return "\n".join(lines)


def _print(result: dict[str, Any]) -> None:
    """One table for every ranked metric (a table per metric would repeat the jobs as many times)."""
    from nomad_eval.report.merge import short_job

    t = Table(title=f"against job {short_job(str(result['reference']))}: paired on the same questions, "
                    f"{result['correction']} correction")
    for c in ("metric", "job", "delta", "95% CI", "p adjusted", "real"):
        t.add_column(c)
    for metric, block in result["metrics"].items():
        for r in block["rows"]:
            ci = "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"
            t.add_row(f"{metric} n={block['n']}", short_job(str(r["job"])), f"{r['delta']:+.4f}", ci,
                      f"{r['p_adjusted']:.3g}", "[green]real[/]" if r["real"] else "noise")
    console.print(t)


def summarize_sweep(jobs: list[Path], out: Path, cfg: Any, quiet: bool) -> tuple[Any, dict[str, Any] | None]:
    """A sweep's (or merged runs') summary with its retrieval-vs-answers section, then the ranking; returns the
    summary table and that section. Neither analysis failing costs the summary."""
    from nomad_eval.report.merge import merge, write_summary

    df, predictors = merge(jobs), None
    try:
        predictors = metric_vs_answers_sweep(jobs, out, cfg, quiet=True)
    except Exception as exc:
        err_console.print(f"warning: retrieval-vs-answers correlation failed: {exc}")
    write_summary(df, out, quiet=quiet, sections=[predictors_markdown(predictors)] if predictors else [])
    for line in predictor_lines(predictors) if predictors and not quiet else []:
        console.print(line, markup=False, highlight=False)
    try:
        rank_sweep(jobs, out, cfg, quiet=quiet)
    except Exception as exc:
        err_console.print(f"warning: sweep ranking failed: {exc}")
    return df, predictors


# Which retrieval metric predicts answers: Kendall τ across jobs that answered the same questions end to end.
PREDICTORS_FILE = "retrieval_vs_answers.json"


def metric_vs_answers_sweep(jobs: list[Path], out: Path, cfg: Any, quiet: bool = False) -> dict[str, Any] | None:
    """τ between each e2e retrieval metric's job means and e2e correctness, per group of generation jobs that share
    a task identity (what was swept aside); written to retrieval_vs_answers.json. None without 2+ such jobs."""
    from nomad_eval.core.rank_correlation import ANSWER_METRIC, metric_vs_answers
    from nomad_eval.report.schema import TASK_FIELDS

    groups: dict[str, dict[str, list[Question]]] = {}
    identities: dict[str, dict[str, Any]] = {}
    for d in jobs:
        loaded = _load(d, "generation")
        if loaded is None:
            continue
        report, questions = loaded
        e2e = [q for q in questions if q.mode == "e2e"]
        if not any(q.values.get(ANSWER_METRIC) is not None for q in e2e):
            continue
        ident = {f: (report.get("identity") or {}).get(f) for f in TASK_FIELDS}
        key = json.dumps(ident, sort_keys=True)
        identities[key] = ident
        groups.setdefault(key, {})[d.name] = e2e
    result: dict[str, Any] = {"answer": ANSWER_METRIC, "method": "Kendall tau-b (scipy.stats.kendalltau) of job means; "
                              "95% percentile interval, questions resampled jointly for all jobs", "groups": []}
    for key, by_job in groups.items():
        if len(by_job) < 2:
            continue
        rows = metric_vs_answers(by_job, seed=int(cfg.seed), resamples=int(cfg.stats.resamples))
        result["groups"].append({"identity": identities[key], "jobs": list(by_job), "rows": [{
            "metric": r.metric, "tau": r.tau, "low": r.low, "high": r.high, "level": r.level, "n_jobs": r.n_jobs,
            "n_questions": r.n_questions, "resamples": r.resamples, "defined": r.defined, "reason": r.reason,
            "means": {j: {"metric": m, "answer": a} for j, (m, a) in r.means.items()}} for r in rows]})
    if not result["groups"]:
        (out / PREDICTORS_FILE).unlink(missing_ok=True)  # a reused folder must not show an earlier sweep's τ
        return None
    write_atomic(out / PREDICTORS_FILE, json.dumps(result, indent=1))
    if not quiet:
        for line in predictor_lines(result):
            console.print(line, markup=False, highlight=False)
    return result


def predictor_lines(result: dict[str, Any]) -> list[str]:
    """One line per retrieval metric: τ with its interval, n, or why it is not measured."""
    lines = []
    for g in result["groups"]:
        for r in g["rows"]:
            n = f"n_jobs={r['n_jobs']}, n_questions={r['n_questions']}"
            if r["tau"] is None:
                lines.append(f"{r['metric']} vs {result['answer']}: τ not measured ({r['reason']}; {n})")
                continue
            ci = "—" if r["low"] is None else f"[{r['low']:+.3f}, {r['high']:+.3f}]"
            lines.append(f"{r['metric']} vs {result['answer']}: τ = {r['tau']:+.3f} {ci} ({n}, {r['defined']} of "
                         f"{r['resamples']} resamples defined)")
    return lines


def predictors_markdown(result: dict[str, Any]) -> str:
    lines = ["", "## Which retrieval metric predicts answers", "",
             f"Kendall τ-b between each job's retrieval mean and its {result['answer']} mean, on the questions "
             "every job answered; 95% interval from resampling those questions jointly for all jobs. "
             "τ near 1: ranking configurations by this metric ranks them by answers. Null: not measured.", ""]
    for g in result["groups"]:
        lines += ["| metric | τ | 95% CI | n_jobs | n_questions | note |", "|---|---|---|---|---|---|"]
        for r in g["rows"]:
            tau = "not measured" if r["tau"] is None else f"{r['tau']:+.3f}"
            ci = "—" if r["low"] is None else f"[{r['low']:+.3f}, {r['high']:+.3f}]"
            lines.append(f"| {r['metric']} | {tau} | {ci} | {r['n_jobs']} | {r['n_questions']} | {r['reason'] or ''} |")
        lines.append("")
    return "\n".join(lines)
