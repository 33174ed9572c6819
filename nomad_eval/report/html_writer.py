"""Assembles report.html for one run (retrieval, generation, position); a sweep's page is report/html_sweep.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from nomad_eval.metrics.registry import headline_names
from nomad_eval.metrics.separation import Scores
from nomad_eval.records import AnswerCase, Case, PositionCase, RetrievalCase, only
from nomad_eval.report import html_charts as charts
from nomad_eval.report.details import CauseCounts
from nomad_eval.report.gate_view import gate_markdown
from nomad_eval.report.html import (
    SINCE_COLUMN,
    Block,
    Section,
    attack_table,
    cause_table,
    figure_div,
    gate_rows,
    headline,
    page,
    question_table,
    text_list,
)
from nomad_eval.report.io import write_atomic
from nomad_eval.report.judge_corrected import corrected_lines, judge_lines
from nomad_eval.report.provenance import code_line
from nomad_eval.report.schema import Report, headline_k
from nomad_eval.report.svg import Figure


def _baseline_metrics(report: Report) -> dict[str, float | None] | None:
    """The compared baseline's values over the questions both runs hold, as the gate recorded them."""
    if report.gate is None or not report.gate.metrics:
        return None
    return {m.name: m.baseline for m in report.gate.metrics}


def gate_section(report: Report) -> list[Section]:
    """The verdict first: what a reviewer opening the artifact of a failed CI job needs to see."""
    g = report.gate
    if g is None:
        return []
    lines = gate_markdown(g)[2:]  # the same lines as report.md, without its heading
    items = [x.removeprefix("- ").strip("*") for x in lines if x and not x.startswith("|")]
    table: list[Block] = [gate_rows(g.metrics)] if g.metrics else []
    return [Section("Gate", [text_list(items), *table])]


def _meta(report: Report) -> str:
    i = report.identity
    if i is None:
        return ""
    # Only what this run has: an app run has no top_k or threshold of ours (its app retrieves by itself).
    parts = [("suite", i.suite), ("fingerprint", i.fingerprint), ("goldens", i.goldens_hash), ("top_k", i.top_k),
             ("threshold", i.threshold), ("embedder", i.embedder), ("model", i.model or None),
             ("distractors", i.distractors or None),
             ("repeats", f"{report.counts.get('repeats')} ({why})" if (why := report.answer_part().repeats_reason)
              else None)]
    return " · ".join([f"{k} {v}" for k, v in parts if v is not None]
                      + ([code_line(report.provenance)] if report.provenance else []))


def retrieval_page(report: Report, cases: list[RetrievalCase], scores: Scores,
                   base: dict[str, float | None] | None) -> str:
    hk = headline_k(report)
    names = [n for n in headline_names("retrieval", hk) if n in report.metrics]
    ident = report.identity
    sections = [*gate_section(report),
                _headline(report, base, names),
                chart_section("Score separation", charts.separation_histograms(
                    scores, ident.threshold if ident else None, ident.min_final_score if ident else None),
                    "chart-separation"),
                chart_section("Metrics by cutoff", charts.metric_at_k(report.metrics, report.intervals), "chart-at-k"),
                chart_section("By tag", charts.tag_bars(report.metrics_by_tag, [n for n in names if "@" in n],
                                                 report.intervals_by_tag), "chart-tags")]
    rows = [{"id": c.id, "question": _question(c), "tags": ", ".join(c.tags),
             "relevant": ", ".join(c.relevant_doc_ids) or "(refusal)",
             "retrieved": ", ".join(f"{r.doc_id} {r.final_score:.3f}" for r in c.retrieved),
             "why": c.why or "", "_passed": c.passed, SINCE: _since(report, c.id)}
            for c in cases]
    columns = ["id", "question", "tags", "relevant", "retrieved", "why", *_since_column(report)]
    sections.append(Section("Questions", [question_table(rows, columns)]))
    sections += _warnings(report)
    return page(f"nomad-eval retrieval report — {report.counts.get('goldens')} questions", _meta(report), sections)


def generation_page(report: Report, cases: list[AnswerCase], base: dict[str, float | None] | None) -> str:
    names = [n for n in report.metrics if n.endswith((".correctness", ".refusal_recall", ".false_refusal_rate",
                                                       ".leakage_rate", ".groundedness", ".pass_rate"))]
    g, a = report.generation_part(), report.answer_part()
    sections = [*gate_section(report),
                _headline(report, base, names),
                chart_section("Decomposition", charts.decomposition_bars(report.metrics, g.mock_line, report.intervals),
                       "chart-decomposition")]
    if g.position is not None:
        sections.append(chart_section("Position in context", charts.position_bars(g.position), "chart-position"))
    rows = [{"id": c.id, "question": _question(c), "mode": c.mode, "repeat": c.repeat,
             "tags": ", ".join(c.tags),
             "answer": c.answer[:300], "why": c.why or ("unstable" if c.unstable else ""),
             "cause": _cause_text(c, a.causes), "_passed": c.passed, "_cause": c.cause,
             SINCE: _since(report, f"{c.mode}:{c.id}")} for c in cases]
    if a.causes.by_mode:
        sections.append(Section("Failure causes", [cause_table(a.causes)]))
    if a.attacks:
        sections.append(Section("Attacks through the corpus", [attack_table(report)]))
    if a.judges:
        sections.append(Section("LLM judges", [text_list(judge_lines(a.judges))]))
    if a.judge_corrected:
        sections.append(Section("Judge means, corrected by human labels",
                                [text_list(corrected_lines(a.judge_corrected))]))
    # A report from before causes were recorded has none: no cause column or select, rather than empty ones.
    causes = a.causes.names or None
    columns = ["id", "question", "mode", "repeat", "tags", "answer", "why"] + (["cause"] if causes else []) + \
        _since_column(report)
    sections.append(Section("Questions", [question_table(rows, columns, causes)]))
    sections += _warnings(report)
    model = report.identity.model if report.identity else "?"
    return page(f"nomad-eval generation report — model {model}", _meta(report), sections)


def _headline(report: Report, base: dict[str, float | None] | None, names: list[str]) -> Section:
    return Section("Headline", [headline(report.metrics, base, names, report.intervals),
                                figure_div(charts.headline_bars(report.metrics, report.intervals, names),
                                           "chart-headline")])


def chart_section(heading: str, fig: Figure, div_id: str) -> Section:
    return Section(heading, [figure_div(fig, div_id)])


def _warnings(report: Report) -> list[Section]:
    return [Section("Warnings", [text_list(report.warnings)])] if report.warnings else []


SINCE = SINCE_COLUMN  # the question table's column marking failures the baseline did not have


def _since_column(report: Report) -> list[str]:
    return [SINCE] if report.gate is not None and report.gate.baseline else []


def _since(report: Report, key: str) -> str:
    """"new failure" for a question that passed in the baseline and fails in this run."""
    return "new failure" if report.gate is not None and key in report.gate.newly_failing else ""


def _question(case: RetrievalCase | AnswerCase) -> str:
    """The question as asked (a conversation's last turn), cut to what a table cell holds."""
    q = case.query
    return q if len(q) <= 200 else q[:199] + "…"


def _cause_text(case: AnswerCase, causes: CauseCounts) -> str:
    label = case.cause
    if not label:
        return ""
    return f"{causes.names.get(label, label)} — {case.cause_evidence or ''}"


def position_page(report: Report, cases: list[PositionCase]) -> str:
    """tier=position: the curve with its intervals, the paired best-vs-worst test, and every case."""
    from nomad_eval.report.markdown import position_summary

    c = report.position_part().curve
    names = [n for n in report.metrics if n.startswith("position")]
    curve: list[Block] = [figure_div(charts.position_curve(c.points), "chart-position-curve"),
                          text_list(position_summary(c))] if c else []
    sections = [*gate_section(report),
                Section("Correctness by position", [headline(report.metrics, None, names, report.intervals), *curve])]
    rows = [{"id": x.id, "position": x.position, "relevant at": x.relevant_at or "dropped",
             "repeat": x.repeat, "answer": x.answer[:300], "why": x.why or "", "_passed": x.passed}
            for x in cases]
    sections.append(Section("Questions", [question_table(rows, ["id", "position", "relevant at", "repeat", "answer",
                                                                 "why"])]))
    sections += _warnings(report)
    model = report.identity.model if report.identity else "?"
    return page(f"nomad-eval position curve — model {model}", _meta(report), sections)


def write_html(out: Path, report: Report, cases: Sequence[Case], scores: Scores | None = None) -> None:
    """`scores`: a retrieval run's scores.json as it was just written (read back from `out` when not given)."""
    base = _baseline_metrics(report)
    if report.tier == "position":
        write_atomic(out / "report.html", position_page(report, only(cases, PositionCase)))
        return
    if report.tier == "retrieval":
        if scores is None:
            scores = json.loads((out / "scores.json").read_text())
        text = retrieval_page(report, only(cases, RetrievalCase), scores, base)
    else:
        text = generation_page(report, only(cases, AnswerCase), base)
    write_atomic(out / "report.html", text)
