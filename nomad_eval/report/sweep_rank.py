"""Rank a sweep's configurations against a reference with paired tests, corrected for testing many, and name the
best one with its evidence. The reference is `compare.reference` (a job) when set, else the baseline the jobs' gates
compared with, else the first job.

Twenty configurations as good as the reference crown a chance "winner" at raw p < 0.05 in about one sweep in
five (bench/stats_sim.py); a correction across the configurations (Holm by default, Benjamini-Hochberg on
request) keeps that under 5%, so a difference marked real is one worth acting on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from rich.table import Table

from nomad_eval.base.atomic import read_jsonl, write_atomic
from nomad_eval.base.console import console, err_console
from nomad_eval.base.json_fields import items
from nomad_eval.base.runfolder import READ, problem
from nomad_eval.core.questions import Question, questions_from_cases, stable
from nomad_eval.core.ranking import Ranked, rank_against_reference
from nomad_eval.core.stats import Correction
from nomad_eval.metrics.registry import Tier, headline_names, spec_for
from nomad_eval.records import decode

# A job as ranked: its report.json, as written, and its questions.
Job = tuple[Mapping[str, object], list[Question]]  # a job's report.json as read, and its questions


class RankRow(TypedDict):
    """A configuration against the reference on one metric, in the metric's own direction."""

    job: str
    delta: float
    low: float | None
    high: float | None
    p: float
    p_adjusted: float
    real: bool


class MetricBlock(TypedDict):
    n: int
    rows: list[RankRow]


class Evidence(TypedDict):
    """The best job's row on one metric, with the metric and its n; the reference itself has no p."""

    job: str
    delta: float
    low: float | None
    high: float | None
    p: NotRequired[float]
    p_adjusted: float | None
    real: bool
    metric: str
    n: int


class Best(TypedDict):
    job: str
    settings: str
    verdict: str | None
    against: str
    chosen_from: str
    evidence: list[Evidence]


class Ranking(TypedDict):
    """ranking.json: every metric's ranking against the reference, the jobs left out and why, the best one."""

    reference: str
    correction: Correction
    metrics: dict[str, MetricBlock]
    left_out: dict[str, str]
    verdicts: dict[str, str]
    best: NotRequired[Best | None]


def read_job(d: Path, tier: str | None = None) -> Job | str:
    """A finished job's report and questions, or why it is left out of the ranking (or of the retrieval-vs-answers
    groups, report/sweep_summary.py); a job not of `tier` is left out before its cases are read."""
    if (damaged := problem(d, hash_only=READ)) is not None:
        return damaged
    report = json.loads((d / "report.json").read_text())
    if tier not in (None, report.get("tier")):
        return f"tier {report.get('tier')}"
    if report.get("status") != "ok":
        return f"the job failed: {report.get('error')}"
    if not (d / "cases.jsonl").exists():
        return f"{d / 'cases.jsonl'} is missing"
    # As this sweep's job wrote them (the manifest check above): decoded, not range-checked again.
    return report, questions_from_cases([decode(row) for row in read_jsonl(d / "cases.jsonl")])


def _baseline(loaded: dict[str, Job]) -> tuple[str, Job] | None:
    """The baseline most of the gated jobs compared with, as a reference to rank against; None when no job was
    compared with one (or it cannot be read now: the jobs' own verdicts still stand)."""
    from nomad_eval.base.errors import NomadError
    from nomad_eval.report.baseline import load_baseline

    used = Counter(str(g["baseline"]) for r, _ in loaded.values() if isinstance(g := r.get("gate"), dict)
                   and g.get("baseline"))
    if not used:
        return None
    path = used.most_common(1)[0][0]
    try:
        base = load_baseline(Path(path))
    except NomadError as exc:
        err_console.print(f"ranking: against the first job, as the baseline {path} cannot be read: {exc}",
                          markup=False, highlight=False)
        return None
    return f"baseline {path}", (base.report.model_dump(), questions_from_cases(base.cases))


@dataclass(frozen=True)
class SweepSettings:
    """How a sweep's jobs are ranked and related (compare.reference, compare.correction, compare.headline_k,
    seed, stats.resamples)."""

    reference: str | None  # the job others are ranked against; None: the jobs' baseline, else the first job
    correction: str        # holm | bh
    headline_k: int
    seed: int
    resamples: int


def rank_sweep(jobs: list[Path], out: Path, settings: SweepSettings, quiet: bool = False) -> Ranking | None:
    loaded, left_out = _jobs(jobs, quiet)
    base = None if settings.reference is not None or not loaded else _baseline(loaded)
    if len(loaded) + (base is not None) < 2:
        return None
    from nomad_eval.report.merge import job_status

    verdicts = {n: job_status(r) for n, (r, _) in loaded.items()}  # "ok" when nothing was gated
    if base is not None:
        ref = base[0]
        loaded = {ref: base[1], **loaded}
    else:
        ref = _reference(list(loaded), settings.reference or next(iter(loaded)))
    method = _correction(settings.correction)
    result = Ranking(reference=ref, correction=method,
                     metrics=_rank_metrics(loaded, ref, method, settings.headline_k, settings.seed),
                     left_out=left_out, verdicts=verdicts)
    result["best"] = best_setting(result, _settings({n: r for n, (r, _) in loaded.items() if n in verdicts}))
    write_atomic(out / "ranking.json", json.dumps(result, indent=1))
    write_atomic(out / "ranking.md", _markdown(result))
    if not quiet:
        print_ranking(result)
    return result


def _jobs(jobs: list[Path], quiet: bool) -> tuple[dict[str, Job], dict[str, str]]:
    """The jobs that can be ranked, and those that cannot with the reason (printed unless `quiet`): a
    configuration missing from the ranking must not look as if it had been tested and lost."""
    found = {d.name: read_job(d) for d in jobs}
    left_out = {n: x for n, x in found.items() if isinstance(x, str)}
    if not quiet:
        for name, why in left_out.items():
            err_console.print(f"ranking: {name} left out: {why}", markup=False, highlight=False)
    return {n: x for n, x in found.items() if not isinstance(x, str)}, left_out


def _rank_metrics(loaded: dict[str, Job], ref: str, method: Correction, headline_k: int, seed: int
                  ) -> dict[str, MetricBlock]:
    """Each headline metric of the reference's tier ranked over the jobs, on the questions stable in all of them."""
    ref_report, ref_q = loaded[ref]
    tier: Tier = "generation" if ref_report.get("tier") == "generation" else "retrieval"
    modes = sorted({q.mode for q in ref_q if q.mode})
    unstable = {q.key for _, qs in loaded.values() for q in qs if q.unstable}
    metrics: dict[str, MetricBlock] = {}
    for metric in headline_names(tier, headline_k, modes):
        per_job = {n: _values(qs, metric, unstable) for n, (_, qs) in loaded.items()}
        block = _rank_metric(metric, per_job, ref, method, seed)
        if block is not None:
            metrics[metric] = block
    return metrics


def _settings(reports: dict[str, Mapping[str, object]]) -> dict[str, str]:
    """Each job's swept settings: the overrides whose value differs between the jobs (`threshold=0.3`)."""
    from nomad_eval.report.merge import UNMEASURED

    typed = {n: dict(str(o).lstrip("+~").partition("=")[::2] for o in items(r.get("overrides"))) for n, r in
             reports.items()}
    keys = sorted({k for t in typed.values() for k in t if k not in UNMEASURED})
    swept = [k for k in keys if len({t.get(k) for t in typed.values()}) > 1]
    return {n: " ".join(f"{k}={t[k]}" for k in swept if k in t) for n, t in typed.items()}


def best_setting(result: Ranking, settings: dict[str, str]) -> Best | None:
    """The configuration to choose, with its evidence: among the jobs whose gate did not fail (all of them when
    none was gated), the best on the first ranked metric, ties broken by the next ones; the reference job itself
    (delta 0) is a candidate. Whether it is better than the reference *in general* is its `real` flag."""
    metrics = list(result["metrics"])
    if not metrics:
        return None
    verdicts = result["verdicts"]
    rows = {m: {r["job"]: r for r in result["metrics"][m]["rows"]} for m in metrics}
    ref = str(result["reference"])
    jobs = [j for j in verdicts if j in rows[metrics[0]] or j == ref]
    ok = [j for j in jobs if verdicts.get(j) in ("pass", "ok")]
    pool = ok or jobs
    if not pool:
        return None

    def better(m: str, job: str) -> float:  # the delta in the better direction (the reference's own is 0)
        spec = spec_for(m)
        delta = float(rows[m][job]["delta"]) if job in rows[m] else 0.0
        return -delta if spec is not None and spec.direction == "lower" else delta

    job = max(pool, key=lambda j: tuple(better(m, j) for m in metrics))
    evidence = [Evidence(**rows[m][job], metric=m, n=result["metrics"][m]["n"]) if job in rows[m] else
                Evidence(metric=m, n=result["metrics"][m]["n"], delta=0.0, low=None, high=None, p_adjusted=None,
                         real=False, job=job) for m in metrics]
    return Best(job=job, settings=settings.get(job, ""), verdict=verdicts.get(job), against=ref,
                chosen_from="jobs whose gate passed" if ok and len(ok) < len(jobs) else "every job",
                evidence=evidence)


def best_line(best: Best | None) -> str | None:
    """The best setting in one line: its settings, verdict, and the first metric's delta with its interval."""
    if best is None:
        return None
    e = best["evidence"][0]
    ci = "" if e["low"] is None else f" [{e['low']:+.4f}, {e['high']:+.4f}]"
    p = "" if e["p_adjusted"] is None else f", p adjusted {e['p_adjusted']:.3g}"
    general = ("better in general" if e["real"] and e["delta"] else
               "not shown better in general on this suite" if e["delta"] else "equal on these questions")
    return (f"best setting: job {best['job'].split('_', 1)[0]} ({best['settings'] or best['job']}), verdict "
            f"{best['verdict']}: {e['metric']} {e['delta']:+.4f}{ci} against {best['against']}, n={e['n']}{p}: "
            f"{general} (chosen from {best['chosen_from']})")


def _correction(named: str) -> Correction:
    """compare.correction: Benjamini-Hochberg when asked for ("bh" or "fdr_bh"), else Holm."""
    return "fdr_bh" if named in ("bh", "fdr_bh") else "holm"


def _reference(names: list[str], wanted: str) -> str:
    """The job named `wanted`, else the first whose name starts with `wanted_`, else the first job."""
    if wanted in names:
        return wanted
    return next((n for n in names if n.split("_", 1)[0] == wanted), names[0])


def _values(questions: list[Question], metric: str, unstable: set[str]) -> dict[str, float | None]:
    return {q.key: q.values.get(metric) for q in stable(questions) if q.key not in unstable}


def _rank_metric(metric: str, per_job: dict[str, dict[str, float | None]], ref: str, method: Correction, seed: int
                 ) -> MetricBlock | None:
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


def _row(r: Ranked, sign: float) -> RankRow:
    """A ranked configuration in the metric's own direction: the delta and interval turned back by `sign`."""
    return RankRow(job=r.name, delta=sign * r.delta, low=None if r.interval is None else sign * (
        r.interval.low if sign > 0 else r.interval.high),
        high=None if r.interval is None else sign * (r.interval.high if sign > 0 else r.interval.low),
        p=r.p_value, p_adjusted=r.p_adjusted, real=r.real)


def _markdown(result: Ranking) -> str:
    lines = [f"# Configurations against {result['reference']}", "",
             f"Paired tests on the same questions, {result['correction']} correction across configurations; "
             "*real* means the difference survives it.", ""]
    left_out = result.get("left_out") or {}
    lines += [f"Left out: {name}: {why}" for name, why in left_out.items()] + ([""] if left_out else [])
    if (best := best_line(result.get("best"))) is not None:
        lines += [f"**{best}**", ""]
    verdicts = result.get("verdicts") or {}
    for metric, block in result["metrics"].items():
        lines += [f"## {metric} (n={block['n']})", "",
                  "| job | verdict | delta | 95% CI | p | p adjusted | real |", "|---|---|---|---|---|---|---|"]
        for r in block["rows"]:
            ci = "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"
            lines.append(f"| {r['job']} | {verdicts.get(r['job'], '—')} | {r['delta']:+.4f} | {ci} | {r['p']:.3g} | "
                         f"{r['p_adjusted']:.3g} | {'yes' if r['real'] else 'no'} |")
        lines.append("")
    return "\n".join(lines)


def print_ranking(result: Ranking) -> None:
    """One table for every ranked metric (a table per metric would repeat the jobs as many times)."""
    from nomad_eval.report.merge import short_job

    ref = str(result["reference"])
    against = ref if ref.startswith("baseline ") else f"job {short_job(ref)}"
    t = Table(title=f"against {against}: paired on the same questions, {result['correction']} correction")
    verdicts = result.get("verdicts") or {}
    for c in ("metric", "job", "verdict", "delta", "95% CI", "p adjusted", "real"):
        t.add_column(c)
    for metric, block in result["metrics"].items():
        for r in block["rows"]:
            ci = "—" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]"
            t.add_row(f"{metric} n={block['n']}", short_job(str(r["job"])), verdicts.get(r["job"], "—"),
                      f"{r['delta']:+.4f}", ci, f"{r['p_adjusted']:.3g}", "[green]real[/]" if r["real"] else "noise")
    console.print(t)
    if (best := best_line(result.get("best"))) is not None:
        console.print(best, markup=False, highlight=False)
