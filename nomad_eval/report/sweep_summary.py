"""A sweep's (or merged runs') summary beyond its table: the best setting, from the ranking (report/sweep_rank.py,
which needs nothing of this module), and which retrieval metric predicts answers, Kendall τ between the jobs'
retrieval means and their answers' (retrieval_vs_answers.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from nomad_eval.base.atomic import write_atomic
from nomad_eval.base.console import console, err_console
from nomad_eval.base.json_fields import fields
from nomad_eval.core.questions import Question
from nomad_eval.report.sweep_rank import SweepSettings, best_line, print_ranking, rank_sweep, read_job


class MeanPair(TypedDict):
    metric: float
    answer: float


class PredictorRow(TypedDict):
    """One retrieval metric's τ against answers across the jobs of a group, with its interval and n."""

    metric: str
    tau: float | None
    low: float | None
    high: float | None
    level: float
    n_jobs: int
    n_questions: int
    resamples: int
    defined: int
    reason: str | None
    means: dict[str, MeanPair]


class PredictorGroup(TypedDict):
    identity: dict[str, object]  # the task identity the group's jobs share, as their report.json holds it
    jobs: list[str]
    rows: list[PredictorRow]


class Predictors(TypedDict):
    """retrieval_vs_answers.json."""

    answer: str
    method: str
    groups: list[PredictorGroup]


def summarize_sweep(jobs: list[Path], out: Path, settings: SweepSettings, quiet: bool
                    ) -> tuple[Any, Predictors | None, str | None]:
    """A sweep's (or merged runs') summary with its retrieval-vs-answers section, then the ranking; returns the
    summary table, that section and the best setting's line. Neither analysis failing costs the summary."""
    from nomad_eval.report.merge import merge, write_summary

    df, predictors, ranking = merge(jobs), None, None
    try:
        predictors = metric_vs_answers_sweep(jobs, out, settings, quiet=True)
    except Exception as exc:
        err_console.print(f"warning: retrieval-vs-answers correlation failed: {exc}")
    try:  # before the summary, which names the best setting; its table is printed after the summary's
        ranking = rank_sweep(jobs, out, settings, quiet=True)
    except Exception as exc:
        err_console.print(f"warning: sweep ranking failed: {exc}")
    best = best_line(ranking.get("best")) if ranking else None
    sections = ([f"\n**{best}** (ranking.md has every configuration)\n"] if best else []) + (
        [predictors_markdown(predictors)] if predictors else [])
    write_summary(df, out, quiet=quiet, sections=sections)
    for line in predictor_lines(predictors) if predictors and not quiet else []:
        console.print(line, markup=False, highlight=False)
    if ranking is not None and not quiet:
        for name, why in (ranking.get("left_out") or {}).items():
            err_console.print(f"ranking: {name} left out: {why}", markup=False, highlight=False)
        print_ranking(ranking)
    return df, predictors, best


# Which retrieval metric predicts answers: Kendall τ across jobs that answered the same questions end to end.
PREDICTORS_FILE = "retrieval_vs_answers.json"


def metric_vs_answers_sweep(jobs: list[Path], out: Path, settings: SweepSettings, quiet: bool = False
                            ) -> Predictors | None:
    """τ between each e2e retrieval metric's job means and e2e correctness, per group of generation jobs that share
    a task identity (what was swept aside); written to retrieval_vs_answers.json. None without 2+ such jobs."""
    from nomad_eval.core.rank_correlation import ANSWER_METRIC, metric_vs_answers
    from nomad_eval.report.schema import TASK_FIELDS

    groups: dict[str, dict[str, list[Question]]] = {}
    identities: dict[str, dict[str, object]] = {}
    for d in jobs:
        loaded = read_job(d, "generation")
        if isinstance(loaded, str):  # failed, damaged or not a generation job: it answered nothing to relate
            continue
        report, questions = loaded
        e2e = [q for q in questions if q.mode == "e2e"]
        if not any(q.values.get(ANSWER_METRIC) is not None for q in e2e):
            continue
        ident = {f: fields(report.get("identity")).get(f) for f in TASK_FIELDS}
        key = json.dumps(ident, sort_keys=True)
        identities[key] = ident
        groups.setdefault(key, {})[d.name] = e2e
    result = Predictors(answer=ANSWER_METRIC, method="Kendall tau-b (scipy.stats.kendalltau) of job means; "
                        "95% percentile interval, questions resampled jointly for all jobs", groups=[])
    for key, by_job in groups.items():
        if len(by_job) < 2:
            continue
        rows = metric_vs_answers(by_job, seed=settings.seed, resamples=settings.resamples)
        result["groups"].append(PredictorGroup(identity=identities[key], jobs=list(by_job), rows=[PredictorRow(
            metric=r.metric, tau=r.tau, low=r.low, high=r.high, level=r.level, n_jobs=r.n_jobs,
            n_questions=r.n_questions, resamples=r.resamples, defined=r.defined, reason=r.reason,
            means={j: MeanPair(metric=m, answer=a) for j, (m, a) in r.means.items()}) for r in rows]))
    if not result["groups"]:
        (out / PREDICTORS_FILE).unlink(missing_ok=True)  # a reused folder must not show an earlier sweep's τ
        return None
    write_atomic(out / PREDICTORS_FILE, json.dumps(result, indent=1))
    if not quiet:
        for line in predictor_lines(result):
            console.print(line, markup=False, highlight=False)
    return result


def predictor_lines(result: Predictors) -> list[str]:
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


def predictors_markdown(result: Predictors) -> str:
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
