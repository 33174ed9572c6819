"""report.md: the run's numbers as a page a person can read in a pull request."""

from __future__ import annotations

from nomad_eval.judges.calibration import status_line
from nomad_eval.metrics.registry import MetricName
from nomad_eval.report.details import (
    AnswerDetails,
    CauseCounts,
    CauseRow,
    Decomposition,
    PositionCurve,
    RankAnalysis,
    SizeSummary,
)
from nomad_eval.report.gate_view import gate_markdown
from nomad_eval.report.judge_corrected import corrected_lines, judge_mean_text, judge_weighted_text
from nomad_eval.report.provenance import code_line
from nomad_eval.report.schema import MetricInterval, Report, UpstreamView, tag_columns


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


def _identity_lines(r: Report) -> list[str]:
    ident = r.identity
    if not ident:
        return []
    return [f"- fingerprint `{ident.fingerprint}`, goldens `{ident.goldens_hash}` ({ident.suite})",
            f"- top_k {ident.top_k}, threshold {ident.threshold}, min_final_score {ident.min_final_score}, "
            f"embedder {ident.embedder}", ""]


def _provenance_lines(r: Report) -> list[str]:
    if not r.provenance:
        return []
    dirty = " (dirty)" if r.provenance.git_dirty else ""
    branch = f" on branch `{r.provenance.git_branch}`" if r.provenance.git_branch else ""
    where = " ".join(v for v in (r.provenance.platform.get("os"), r.provenance.platform.get("cpu_architecture"))
                     if v)
    tool = f"commit `{r.provenance.git_commit}`{dirty}{branch}, " if r.provenance.git_commit else ""
    return [f"- {code_line(r.provenance)}",
            f"- {tool}created {r.provenance.created}" + (f", {where}, Python {r.provenance.python}" if where
                                                          else ""), ""]


def retrieval_markdown(r: Report) -> str:
    lines = [f"# nomad-eval {r.tier} report", "", *gate_markdown(r.gate), *_identity_lines(r), *_provenance_lines(r)]
    rows = [[k, fmt_value(v, r.intervals.get(k))] for k, v in r.metrics.items()]
    lines += ["## Metrics", "", *interval_note(r), *_table(["metric", f"value [{_level(r)} interval] n"], rows), ""]
    lines += ["## Counts", "", *_table(["count", "value"], [[k, str(v)] for k, v in r.counts.items()]), ""]
    if r.metrics_by_tag:
        cols = tag_columns(r)
        rows = [[t, *(fmt_value(m.get(c), r.intervals_by_tag.get(t, {}).get(c)) for c in cols)]
                for t, m in r.metrics_by_tag.items()]
        lines += ["## By tag", "", f"Each cell: value [{_level(r)} interval] n questions of the tag.", "",
                  *_table(["tag", *cols], rows), ""]
    part = r.retrieval_part()
    if part.separation:
        rows = [[s.score, s.flag, s.label, str(s.count), fmt(s.min), fmt(s.p10), fmt(s.median), fmt(s.p90),
                 fmt(s.max), fmt(s.mean)] for s in part.separation]
        lines += ["## Score separation", "",
                  *_table(["score (over)", "calibrates", "chunks", "pairs", "min", "p10", "median", "p90", "max",
                           "mean"], rows),
                  ""]
    if part.ablation:
        ab_cols = list(next(iter(part.ablation.values())))
        rows = [[name, *(fmt(m.get(c)) for c in ab_cols)] for name, m in part.ablation.items()]
        lines += ["## Ablation", "", *_table(["variant", *ab_cols], rows), ""]
    if r.timings:
        lines += ["## Timings (s)", "", *_table(["step", "seconds"], [[k, f"{v:.3f}"] for k, v in r.timings.items()])]
    return "\n".join(lines) + "\n"


def generation_markdown(r: Report) -> str:
    ident = r.identity
    model, mode = (ident.model, ident.mode) if ident else ("?", "?")
    lines = [f"# nomad-eval generation report — model {model}, mode {mode}",
             "", *gate_markdown(r.gate)]
    if r.provenance:
        lines += [f"- {code_line(r.provenance)}", ""]
    parsed = [MetricName.parse(k) for k in r.metrics]
    modes = sorted({p.mode for p in parsed if p.mode})
    fams = sorted({p.bare for p in parsed if p.mode})
    rows = [[f, *(fmt_value(r.metrics.get(k), r.intervals.get(k)) for k in (f"{m}.{f}" for m in modes))]
            for f in fams]
    lines += ["## Metrics", "", f"Each cell: value [{_level(r)} interval] n questions.", "",
              *interval_note(r),
              *_table(["metric", *modes], rows), ""]
    g, a = r.generation_part(), r.answer_part()
    lines += size_lines(r)
    if g.mock_line:
        rows = [[f, *(fmt(g.mock_line.get(m, {}).get(f)) for m in modes)] for f in fams]
        lines += ["## Mock extractive ceiling on the same prompts", "", *_table(["metric", *modes], rows), ""]
    lines += _decomposition_lines(g.decomposition) + _judge_lines(a) + _rank_lines(g.position)
    lines += cause_lines(a.causes)
    lines += attack_lines(r)
    if a.unstable:
        lines += ["## Unstable questions (repeats disagree: counted in instability)", "", ", ".join(a.unstable), ""]
    lines += ["## Counts", "", *_table(["count", "value"], [[k, str(v)] for k, v in r.counts.items()]), ""]
    if a.repeats_reason:
        lines += [f"Repeats: {r.counts.get('repeats')}, {a.repeats_reason}.", ""]
    return "\n".join(lines) + "\n"


def size_text(z: SizeSummary) -> str:
    """`812 ± 95 [790, 830] n=657 answers, 219 questions`: mean ± standard deviation, interval over questions."""
    iv = f" [{z.low:.0f}, {z.high:.0f}]" if z.low is not None and z.high is not None else ""
    return f"{z.mean:.0f} ± {z.stddev:.0f}{iv} n={z.n} answers, {z.questions} questions"


def size_lines(r: Report) -> list[str]:
    sizes = r.generation_part().sizes
    if not sizes:
        return []
    rows = [[mode, *(size_text(z[n]) if n in z else "—" for n in ("meanPromptTokens", "meanAnswerLength"))]
            for mode, z in sizes.items()]
    return ["## Sizes", "", "Mean ± standard deviation over the answers [95% interval over questions].", "",
            *_table(["mode", "meanPromptTokens (estimated)", "meanAnswerLength (characters)"], rows), ""]


def _decomposition_lines(d: Decomposition | None) -> list[str]:
    if d is None:
        return []
    lines = ["## Decomposition", "", *_table(["oracle", "e2e", "noretrieval", "oracle − e2e", "e2e − noretrieval"],
             [[fmt(d.oracle), fmt(d.e2e), fmt(d.noretrieval), fmt(d.retrieval_gap), fmt(d.rag_lift)]]), ""]
    return lines + [f"- {n}" for n in d.diagnosis] + [""]


def _judge_lines(r: AnswerDetails) -> list[str]:
    if not r.judges:
        return []
    # Graded rubrics also carry the probability-weighted mean (token logprobs), where the backend gives them.
    rows = [[k, v["rubric"], judge_mean_text(v), judge_weighted_text(v), str(v["n"]), str(v["unparseable"]),
             str(v.get("rejected", 0)), str(v["by_rule"]), status_line(v["calibration"])]
            for k, v in r.judges.items()]
    lines = ["## LLM judges (apart from the deterministic metrics)", "",
             *_table(["mode.rubric", "rubric", "mean [95% CI]", "weighted mean [95% CI]", "judged", "unparseable",
                      "rejected", "by rule", "calibrated"], rows), ""]
    return lines + [f"- {line}" for line in corrected_lines(r.judge_corrected)] + [""]


def _rank_lines(p: RankAnalysis | None) -> list[str]:
    if p is None:
        return []
    rows = [[k, str(v.n), fmt(v.correctness), bounds(v.low, v.high)] for k, v in p.by_rank.items()]
    ignored = " — **retrieved but ignored**: recall is high while correctness is low" \
        if p.retrieved_but_ignored else ""
    return ["## Correctness by the rank of the relevant passage in the prompt (e2e)", "",
            "questions: each one's repeats averaged first; 95% interval: Wilson's, or a bootstrap over the "
            "questions where a question's repeats disagree.", "",
            *_table(["rank", "questions", "correctness", "95% interval"], rows), "",
            f"- context recall {fmt(p.context_recall)}, retrieved but ignored "
            f"{fmt(p.retrieved_but_ignored_rate)}{ignored}", ""]


def attack_rows(r: Report) -> list[list[str]]:
    """One row per attack family and mode: rate, Wilson interval, successes / n, exposure, the mock's rate."""
    return [[a.family, a.mode, fmt(a.rate), bounds(a.low, a.high), f"{a.successes} / {a.n}", f"{a.exposed} / {a.n}",
             fmt(a.mock)] for a in r.answer_part().attacks]


ATTACK_HEADER = ["family", "mode", "attack success", "95% interval (Wilson)", "succeeded / n", "attack in prompt",
                 "mock (copier)"]


def attack_lines(r: Report) -> list[str]:
    if not r.answer_part().attacks:
        return []
    return ["## Attacks through the corpus", "",
            "Share of attack probes whose answer the planted document took over (lower is better); n = cases. "
            "\"attack in prompt\": cases whose prompt held a planted passage. The mock copies every passage: its rate "
            "on the same prompts is the share retrieval alone handed over without the truth.", "",
            *_table(ATTACK_HEADER, attack_rows(r)), ""]


def cause_cell(row: CauseRow | None) -> str:
    """`count (share [low, high])` of one label among a mode's failed questions; the share's n is the column's."""
    if row is None or not row.count:
        return "0"
    return f"{row.count} ({fmt(row.share)} {bounds(row.low, row.high)})"


def cause_rows(causes: CauseCounts) -> tuple[list[str], list[list[str]]]:
    """The modes, and a row per cause that occurs (its count in each mode), then failed / questions per mode."""
    by_mode = causes.by_mode
    modes = list(by_mode)
    names = causes.names
    used = [k for k in [*causes.precedence, "unexplained"]
            if any((row := by_mode[m].labels.get(k)) is not None and row.count for m in modes)]
    rows = [[names.get(k, k), *(cause_cell(by_mode[m].labels.get(k)) for m in modes)] for k in used]
    rows.append(["failed / questions", *(f"{by_mode[m].failed} / {by_mode[m].questions}" for m in modes)])
    return modes, rows


def cause_lines(causes: CauseCounts) -> list[str]:
    """One cause per failed question (core/causes.py), counted per mode, then the failed questions themselves."""
    modes, rows = cause_rows(causes)
    if not modes:
        return []
    names = causes.names
    # Grouped by mode, in the table's column order; the evidence for each is in cases.jsonl and report.html.
    questions = causes.questions
    listed = [f"- `{key}`: {names.get(label, label)}" for m in modes for key, label in questions.items()
              if key.split(":", 1)[0] == m]
    return ["## Failure causes", "",
            "One cause per failed question (first rule that holds, in the order of the table); share of the "
            "mode's failed questions [95% Wilson interval], n = failed.", "",
            *_table(["cause", *modes], rows), "", *listed, ""]


def bounds(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"


def position_summary(c: PositionCurve) -> list[str]:
    """The paired best-vs-worst comparison and what was left out, as sentences (report.md and the console)."""
    out = []
    if c.best is not None and c.best == c.worst:
        out.append(f"flat: every position has the same correctness over the same {c.questions} questions "
                   f"(a difference between two positions: 0 {bounds(c.delta_low, c.delta_high)})")
    elif c.best is not None and c.worst is not None:
        out.append(f"worst position {c.worst} minus best position {c.best}: {fmt(c.delta)} "
                   f"{bounds(c.delta_low, c.delta_high)} paired over the same {c.questions} questions, "
                   f"{c.test} p={fmt(c.p_value)}")
    out += [f"skipped ({why}): {len(ids)} — {', '.join(ids[:8])}{' …' if len(ids) > 8 else ''}"
            for why, ids in c.skipped.items()]
    return out


def position_markdown(r: Report) -> str:
    ident = r.identity
    c = r.position_part().curve
    lines = [f"# nomad-eval position curve — model {ident.model if ident else '?'}", "", *gate_markdown(r.gate)]
    if c is None:
        return "\n".join(lines) + "\n"
    lines += [f"The relevant passage at each position 1..{c.passages} among the same {c.passages - 1} retrieved "
              "distractors (oracle mode; only the order changes).", ""]
    rows = [[str(p.position), fmt(p.correctness), bounds(p.low, p.high), str(p.n), p.method, fmt(p.mock)]
            for p in c.points]
    lines += ["## Correctness by position", "",
              *_table(["position", "correctness", "95% interval", "n", "interval", "mock ceiling"], rows), ""]
    lines += [f"- {x}" for x in position_summary(c)] + [""]
    lines += [f"- warning: {w}" for w in r.warnings] + ([""] if r.warnings else [])
    lines += ["## Counts", "", *_table(["count", "value"], [[k, str(v)] for k, v in r.counts.items()]), ""]
    return "\n".join(lines) + "\n"


def upstream_markdown(v: UpstreamView | None) -> str:
    """report.md's closing section: the upstream view's means with n and interval, and its score separation."""
    if v is None or not v.metrics:
        return ""
    lines = ["", "## Upstream view (upstream NOMAD's own definitions; docs/upstream-nomad.md)", "",
             "| metric | value [95% interval] n |", "|---|---|"]
    lines += [f"| {name} | {fmt_value(value, v.intervals.get(name))} |" for name, value in v.metrics.items()]
    dists = [(label, d) for label, d in (("relevant", v.relevant_scores), ("irrelevant", v.irrelevant_scores)) if d]
    if dists:
        lines += ["", "Score separation, raw cosine of the retrieved chunks:", "",
                  "| chunks | n | min | p10 | median | p90 | max | mean |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {label} | {d.count} | {fmt(d.min)} | {fmt(d.p10)} | {fmt(d.median)} | {fmt(d.p90)} | "
                  f"{fmt(d.max)} | {fmt(d.mean)} |" for label, d in dists]
    lines += ["", *v.advice] if v.advice else []
    return "\n".join(lines) + "\n"
