"""report.md: the run's numbers as a page a person can read in a pull request."""

from __future__ import annotations

from nomad_eval.judges.calibration import status_line
from nomad_eval.metrics.registry import headline_names
from nomad_eval.report.judge_corrected import corrected_lines
from nomad_eval.report.schema import MetricInterval, Report, headline_k


def fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def fmt_interval(iv: MetricInterval | None) -> str:
    """`[low, high]`; "—" when there is none: a report from before intervals, or fewer than two questions."""
    return "—" if iv is None or iv.low is None or iv.high is None else f"[{iv.low:.4f}, {iv.high:.4f}]"


def fmt_n(iv: MetricInterval | None) -> str:
    return "—" if iv is None else str(iv.n)


def fmt_value(v: float | None, iv: MetricInterval | None) -> str:
    """`value [low, high] n=N`: a headline number never stands without how many questions it rests on."""
    if v is None:
        return "—"
    return f"{fmt(v)} {fmt_interval(iv)}" + ("" if iv is None else f" n={iv.n}")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _level(r: Report) -> str:
    levels = {iv.level for iv in r.intervals.values()}
    return f"{levels.pop():.0%}" if len(levels) == 1 else "95%"


def interval_note(r: Report) -> list[str]:
    """How the intervals were made, when it is not one question per observation: a reader must know."""
    clusters = {iv.clusters for iv in r.intervals.values() if iv.clusters}
    if not clusters:
        return []
    return [f"Intervals resample whole source documents ({max(clusters)} clusters), not single questions.", ""]


def retrieval_markdown(r: Report) -> str:
    ident = r.identity
    lines = [f"# nomad-eval {r.tier} report", ""]
    if ident:
        lines += [f"- fingerprint `{ident.fingerprint}`, goldens `{ident.goldens_hash}` ({ident.suite})",
                  f"- top_k {ident.top_k}, threshold {ident.threshold}, min_final_score {ident.min_final_score}, "
                  f"embedder {ident.embedder}", ""]
    if r.provenance:
        dirty = " (dirty)" if r.provenance.git_dirty else ""
        lines += [f"- commit `{r.provenance.git_commit}`{dirty}, created {r.provenance.created}", ""]
    rows = [[k, fmt_value(v, r.intervals.get(k))] for k, v in r.metrics.items()]
    lines += ["## Metrics", "", *interval_note(r), *_table(["metric", f"value [{_level(r)} interval] n"], rows), ""]
    lines += ["## Counts", "", *_table(["count", "value"], [[k, str(v)] for k, v in r.counts.items()]), ""]
    if r.metrics_by_tag:
        cols = [c for c in headline_names("retrieval", headline_k(r)) if "@" in c and c in r.metrics]
        rows = [[t, *(fmt(m.get(c)) for c in cols)] for t, m in r.metrics_by_tag.items()]
        lines += ["## By tag", "", *_table(["tag", *cols], rows), ""]
    if r.separation:
        rows = [[s.score, s.flag, s.label, str(s.count), fmt(s.min), fmt(s.p10), fmt(s.median), fmt(s.p90),
                 fmt(s.max), fmt(s.mean)] for s in r.separation]
        lines += ["## Score separation", "",
                  *_table(["score (over)", "calibrates", "chunks", "pairs", "min", "p10", "median", "p90", "max",
                           "mean"], rows),
                  ""]
    if r.ablation:
        ab_cols = list(next(iter(r.ablation.values())))
        rows = [[name, *(fmt(m.get(c)) for c in ab_cols)] for name, m in r.ablation.items()]
        lines += ["## Ablation", "", *_table(["variant", *ab_cols], rows), ""]
    if r.timings:
        lines += ["## Timings (s)", "", *_table(["step", "seconds"], [[k, f"{v:.3f}"] for k, v in r.timings.items()])]
    return "\n".join(lines) + "\n"


def generation_markdown(r: Report) -> str:
    ident = r.identity
    model, mode = (ident.model, ident.mode) if ident else ("?", "?")
    lines = [f"# nomad-eval generation report — model {model}, mode {mode}",
             ""]
    modes = sorted({k.split(".", 1)[0] for k in r.metrics})
    fams = sorted({k.split(".", 1)[1] for k in r.metrics})
    rows = [[f, *(fmt_value(r.metrics.get(k), r.intervals.get(k)) for k in (f"{m}.{f}" for m in modes))]
            for f in fams]
    lines += ["## Metrics (stable questions)", "", f"Each cell: value [{_level(r)} interval] n questions.", "",
              *interval_note(r),
              *_table(["metric", *modes], rows), ""]
    if r.mock_line:
        rows = [[f, *(fmt(r.mock_line.get(m, {}).get(f)) for m in modes)] for f in fams]
        lines += ["## Mock extractive ceiling on the same prompts", "", *_table(["metric", *modes], rows), ""]
    if r.decomposition:
        d = r.decomposition
        lines += ["## Decomposition", "", *_table(["oracle", "e2e", "noretrieval", "oracle − e2e", "e2e − noretrieval"],
                  [[fmt(d.get("oracle")), fmt(d.get("e2e")), fmt(d.get("noretrieval")), fmt(d.get("retrieval_gap")),
                    fmt(d.get("rag_lift"))]]), ""]
        lines += [f"- {n}" for n in d.get("diagnosis", [])] + [""]
    if r.judges:
        # Graded rubrics also carry the probability-weighted mean (token logprobs), where the backend gives them.
        rows = [[k, v["rubric"], fmt(v.get("mean")), fmt(v.get("mean_weighted")), str(v["n"]), str(v["unparseable"]),
                 str(v.get("rejected", 0)), str(v["by_rule"]),
                 status_line(v["calibration"])]
                for k, v in r.judges.items()]
        lines += ["## LLM judges (apart from the deterministic metrics)", "",
                  *_table(["mode.rubric", "rubric", "mean", "weighted mean", "judged", "unparseable", "rejected",
                            "by rule",
                            "calibrated"], rows),
                  ""]
        lines += [f"- {line}" for line in corrected_lines(r.judge_corrected)] + [""]
    if r.position:
        p = r.position
        rows = [[k, str(v["n"]), fmt(v["correctness"])] for k, v in p["by_rank"].items()]
        lines += ["## Correctness by the rank of the relevant passage in the prompt (e2e)", "",
                  *_table(["rank", "questions", "correctness"], rows), "",
                  f"- context recall {fmt(p['context_recall'])}, retrieved but ignored "
                  f"{fmt(p['retrieved_but_ignored_rate'])}" + (" — **retrieved but ignored**: recall is high while "
                                                               "correctness is low" if p["retrieved_but_ignored"]
                                                               else ""), ""]
    if r.unstable:
        lines += ["## Unstable questions (left out of the means)", "", ", ".join(r.unstable), ""]
    lines += ["## Counts", "", *_table(["count", "value"], [[k, str(v)] for k, v in r.counts.items()]), ""]
    return "\n".join(lines) + "\n"
