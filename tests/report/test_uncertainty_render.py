"""Intervals wherever a report is read: report.md, the console, report.html's data, and a sweep's summary.

Reports are built by hand, so rendering is tested apart from how the tiers compute intervals; one job of each
sweep predates intervals, the way an old report.json reads back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from nomad_eval.base.console import console
from nomad_eval.metrics.separation import rounded
from nomad_eval.report.console_view import print_generation, print_retrieval
from nomad_eval.report.details import GenerationDetails, RankAnalysis
from nomad_eval.report.html_sweep import write_sweep_html
from nomad_eval.report.html_writer import generation_page, retrieval_page
from nomad_eval.report.markdown import generation_markdown, retrieval_markdown
from nomad_eval.report.merge import merge, write_summary
from nomad_eval.report.schema import MetricInterval, Report

SCORES = {"raw": {"relevant": rounded([0.3, 0.6, 0.7]), "irrelevant": rounded([0.0, 0.1, 0.2, 0.4])},
          "final": {"relevant": rounded([0.5]), "irrelevant": rounded([0.2])},
          "population": {"raw": "every chunk", "final": "candidate pool"}}


def retrieval_report(intervals: bool = True, recall5: float = 0.9, overrides: list[str] | None = None) -> Report:
    return Report(
        tier="retrieval", overrides=overrides or [],
        metrics={"recall@1": 0.8, "recall@5": recall5, "mrr@5": 0.85, "hit@1": None, "nonEmptyRateOnRefusal": 1.0},
        intervals={"recall@1": MetricInterval(n=40, low=0.7, high=0.9),
                   "recall@5": MetricInterval(n=40, low=recall5 - 0.0877, high=min(recall5 + 0.0551, 1.0)),
                   # One refusal question: a mean with no spread to resample.
                   "nonEmptyRateOnRefusal": MetricInterval(n=1, low=None, high=None)} if intervals else {},
        counts={"goldens": 41},
        metrics_by_tag={"water": {"recall@5": 0.75, "mrr@5": 0.7}, "refusal": {"recall@5": None, "mrr@5": None}},
        intervals_by_tag={"water": {"recall@5": MetricInterval(n=12, low=0.5, high=0.9167),
                                    "mrr@5": MetricInterval(n=12, low=0.45, high=0.9)}} if intervals else {},
    )


# Two ranks from position_analysis: 0/1 values with Wilson's interval, and a report from before intervals.
BY_RANK = {"1": {"n": 20, "cases": 60, "correctness": 0.7, "low": 0.4810, "high": 0.8545, "method": "wilson"},
           "2": {"n": 4, "correctness": 0.5}}


def generation_report() -> Report:
    return Report(tier="generation", metrics={"e2e.correctness": 0.6, "oracle.correctness": 0.8},
                  intervals={"e2e.correctness": MetricInterval(n=30, low=0.42, high=0.76, clusters=12)},
                  counts={"goldens": 30, "repeats": 3},
                  details=GenerationDetails(position=RankAnalysis.model_validate({
                      "by_rank": BY_RANK, "context_recall": 0.9, "retrieved_but_ignored_rate": 0.1,
                      "retrieved_but_ignored": False})))


def test_markdown_shows_value_interval_and_n_and_a_dash_when_missing() -> None:
    md = retrieval_markdown(retrieval_report())
    assert "| metric | value [95% interval] n |" in md
    assert "| recall@5 | 0.9000 [0.8123, 0.9551] n=40 |" in md
    assert "| mrr@5 | 0.8500 — |" in md                      # no interval recorded for it
    assert "| nonEmptyRateOnRefusal | 1.0000 — n=1 |" in md  # one question: n, but no interval
    assert "| hit@1 | — |" in md                             # no value at all
    old = retrieval_markdown(retrieval_report(intervals=False))  # a report from before intervals
    assert "| recall@5 | 0.9000 — |" in old
    gen = generation_markdown(generation_report())
    assert "| correctness | 0.6000 [0.4200, 0.7600] n=30 | 0.8000 — |" in gen
    assert "whole source documents (12 clusters)" in gen
    assert "| rank | questions | correctness | 95% interval |" in gen
    assert "| 1 | 20 | 0.7000 | [0.4810, 0.8545] |" in gen and "| 2 | 4 | 0.5000 | — |" in gen


def test_by_tag_tables_carry_n_and_an_interval_per_cell() -> None:
    md = retrieval_markdown(retrieval_report())
    by_tag = md[md.index("## By tag"):]
    assert "| tag | mrr@5 | recall@5 |" in by_tag  # the headline cutoff's metrics the report measured
    assert "| water | 0.7000 [0.4500, 0.9000] n=12 | 0.7500 [0.5000, 0.9167] n=12 |" in by_tag
    assert "| refusal | — | — |" in by_tag
    page = retrieval_page(retrieval_report(), [], SCORES, None)
    tags = page[page.index('id="chart-tags"'):]
    tags = tags[:tags.index("</svg>")]
    assert "water (n=12)" in tags and "refusal (n=" not in tags  # no empty slot for a tag that measured none
    assert "not shown, no question measures them: refusal" in tags
    assert len(re.findall(r'class="yerror"', tags)) == 2  # water's two metrics; refusal measured none
    assert "n=12" in tags and "[0.5000, 0.9167]" in tags  # each bar's hover
    old = retrieval_page(retrieval_report(intervals=False), [], SCORES, None)
    assert "water (n=—)" in old


def test_console_tables_carry_an_interval_column_and_n() -> None:
    with console.capture() as cap:
        print_retrieval(retrieval_report(), [], verbose=False, quiet=False, run_dir=Path("run"))
    out = cap.get()
    assert "@1 [95%]" in out and "@5 [95%]" in out and "not shown" not in out
    recall = next(line for line in out.splitlines() if "recall" in line)
    # Every cutoff carries its interval; n is the row's, both cutoffs standing on the same 40 questions.
    assert "0.8000 [0.7000, 0.9000]" in recall and "0.9000 [0.8123, 0.9551]" in recall
    assert re.search(r"\b40\b", recall)
    assert "nonEmptyRateOnRefusal: 1.0000 — n=1" in out
    with console.capture() as cap:
        print_retrieval(retrieval_report(intervals=False), [], verbose=False, quiet=False, run_dir=Path("run"))
    assert "—" in next(line for line in cap.get().splitlines() if "recall" in line)
    with console.capture() as cap:
        print_generation(generation_report(), quiet=False, run_dir=Path("run"))
    out = cap.get()
    assert "e2e 95%" in out and "[0.4200, 0.7600]" in out
    assert "1: 0.7000 [0.4810, 0.8545] n=20, 2: 0.5000 — n=4" in out


def test_console_names_the_cutoffs_a_narrow_terminal_leaves_out(monkeypatch: pytest.MonkeyPatch) -> None:
    ks = (1, 3, 5, 10)
    r = Report(tier="retrieval", metrics={f"recall@{k}": 0.5 + k / 100 for k in ks},
               intervals={f"recall@{k}": MetricInterval(n=40 if k < 10 else 38, low=0.4, high=0.7) for k in ks})
    with console.capture() as cap:
        print_retrieval(r, [], verbose=False, quiet=False, run_dir=Path("run"))
    recall = next(line for line in cap.get().splitlines() if "recall" in line)
    assert "0.6000 [0.4000, 0.7000] n=38" in recall  # a cutoff whose n differs from its row's carries its own
    monkeypatch.setattr(console, "width", 80)
    with console.capture() as cap:
        print_retrieval(r, [], verbose=False, quiet=False, run_dir=Path("run"))
    out = cap.get()
    assert max(len(line) for line in out.splitlines() if "│" in line) <= 80
    assert "@5 [95%]" in out and "@10 [95%]" not in out  # the headline cutoff stays
    assert "2 cutoff(s) not shown at this width (@3, @10)" in out and "report.md" in out


def test_html_pages_draw_error_bars_from_intervals_and_none_without() -> None:
    page = retrieval_page(retrieval_report(), [], SCORES, None)
    assert 'id="chart-headline"' in page and "<td>[0.8123, 0.9551]</td><td>40</td>" in page
    assert 'class="yerror"' in page  # one drawn error bar per interval, none where a value has none
    old = retrieval_page(retrieval_report(intervals=False), [], SCORES, None)
    assert 'class="yerror"' not in old and "<td>—</td><td>—</td>" in old
    gen = generation_page(generation_report(), [], None)
    assert 'class="yerror"' in gen
    ranks = gen[gen.index('id="chart-position"'):]
    ranks = ranks[:ranks.index("</svg>")]
    assert len(re.findall(r'class="yerror"', ranks)) == 1  # rank 1's interval; rank 2 (an old report) has none
    assert "n=20" in ranks and "n=4" in ranks


def test_position_by_rank_counts_questions_with_wilsons_interval() -> None:
    from scipy.stats import binomtest

    from nomad_eval.records import AnswerCase, values
    from nomad_eval.run.generation_cases import position_analysis

    def case(qid: str, repeat: int, correct: float | None, injected: list[str]) -> AnswerCase:
        return AnswerCase(id=qid, mode="e2e", repeat=repeat, expect_refusal=False, relevant_doc_ids=("d",),
                          injected=tuple(injected), metrics=values({"correctness": correct}))

    # Three repeats of 7 questions with the passage first (5 right), two with it second (1 right, 1 unjudged).
    cases = [case(f"q{i}", r, 1.0 if i < 5 else 0.0, ["d#1", "x#1"]) for i in range(7) for r in range(3)]
    cases += [case("q7", r, 1.0, ["x#1", "d#2"]) for r in range(3)]
    cases += [case("q8", r, None, ["x#1", "d#2"]) for r in range(3)]
    by_rank = position_analysis(cases).by_rank
    first = by_rank["1"]
    assert (first.n, first.cases, first.correctness) == (7, 21, 5 / 7)  # repeats are not questions
    ci = binomtest(5, 7).proportion_ci(method="wilson")
    assert (first.low, first.high) == pytest.approx((ci.low, ci.high))
    assert by_rank["2"].n == 1 and by_rank["2"].low is not None  # the unjudged question is not counted


def _job(sweep: Path, name: str, report: Report) -> Path:
    d = sweep / name
    d.mkdir(parents=True)
    (d / "report.json").write_text(report.model_dump_json())
    return d


def test_a_sweep_summary_carries_interval_columns(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    jobs = [_job(sweep, "0_threshold-0.3", retrieval_report(recall5=0.9, overrides=["threshold=0.3"])),
            _job(sweep, "1_threshold-0.5", retrieval_report(recall5=0.8, overrides=["threshold=0.5"])),
            _job(sweep, "2_threshold-0.7", retrieval_report(intervals=False, recall5=0.6, overrides=["threshold=0.7"]))]
    df = merge(jobs)
    write_summary(df, sweep, quiet=True)
    parquet = pl.read_parquet(sweep / "summary.parquet")
    for col in ("recall@5.low", "recall@5.high", "recall@5.n", "nonEmptyRateOnRefusal.n"):
        assert col in parquet.columns, col
    assert "mrr@5.low" not in parquet.columns  # no job reported an interval for it
    assert parquet["recall@5.n"].to_list() == [40, 40, None]
    assert parquet["recall@5.low"][0] == 0.9 - 0.0877
    md = (sweep / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| job"))
    assert ".low" not in header and ".n " not in header  # folded into the metric's cell
    assert "| 0.9000 [0.8123, 0.9551] n=40 |" in md
    assert "| 0.6000 — |" in md  # the job from before intervals
    write_sweep_html(sweep, df.to_dicts(), [])
    html = (sweep / "report.html").read_text()
    # The swept parameter is the threshold alone: interval columns are no parameter to plot against.
    assert re.findall(r'id="chart-([^"]+)"', html) == ["threshold"]
    assert 'class="yerror"' in html
    assert "0.9000 [0.8123, 0.9551] n=40" in html


def test_the_sweep_console_table_names_the_columns_it_leaves_out(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    df = pl.DataFrame([{"job": "0", **{f"m{i}": f"a value of some width {i}" for i in range(12)}}])
    monkeypatch.setattr(console, "width", 100)
    with console.capture() as cap:
        write_summary(df, tmp_path, quiet=False)
    out = " ".join(cap.get().split())
    assert f"more in {tmp_path / 'summary.md'}: " in out and out.rstrip().endswith("m10, m11")
    assert "| m10 | m11 |" in (tmp_path / "summary.md").read_text()  # where the note sends the reader


def test_old_report_json_without_intervals_reads_back_and_merges(tmp_path: Path) -> None:
    raw = json.loads(retrieval_report().model_dump_json())
    raw.pop("intervals")
    d = tmp_path / "old"
    d.mkdir()
    (d / "report.json").write_text(json.dumps(raw))
    r = Report.model_validate(raw)
    assert r.intervals == {} and "| recall@5 | 0.9000 — |" in retrieval_markdown(r)
    assert not any(c.endswith((".low", ".high", ".n")) for c in merge([d]).columns)


def test_a_corrected_judge_line_leads_with_the_adjusted_interval_and_keeps_ppi_pythons() -> None:
    from nomad_eval.core.ppi import corrected_mean
    from nomad_eval.report.judge_corrected import describe

    judge = {f"c{i}": 1.0 if i < 80 else 0.0 for i in range(100)}
    labels = {f"c{i}": 0.0 if i < 3 else 1.0 for i in range(30)}
    r = {**corrected_mean(judge, labels).as_dict(), "null_score": 0.5}
    line = describe("e2e.faithfulness", r)
    adjusted = f"[{r['adjusted_low']:.3f}, {r['adjusted_high']:.3f}]"
    unadjusted = f"ppi-python's unadjusted [{r['low']:.3f}, {r['high']:.3f}]"
    assert adjusted in line and unadjusted in line and line.index(adjusted) < line.index(unadjusted)
    assert "30 of 100 questions labelled" in line and "disagreed with 3 label(s)" in line
