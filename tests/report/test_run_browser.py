"""runs.html, the run browser, over real runs, opened in headless Chromium: every run listed, the recall@5 trend
drawn, and the side-by-side of two runs marks exactly the questions whose outcome changed."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from nomad_eval.base.paths import CONF
from nomad_eval.cli.entry import run_tier
from nomad_eval.records import decode
from nomad_eval.report.browser import build_page, questions, run_entry
from nomad_eval.run.runs_page import _cases as read_cases
from nomad_eval.run.runs_page import rebuild
from tests.conftest import MINI
from tests.report.test_html_in_browser import ARTIFACTS, CHROMIUM, chromium

THRESHOLDS = (0.25, 0.45, 0.6)


def _run(tmp_path: Path, data_dir: Path, *overrides: str) -> int:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"paths.data_dir={data_dir}", "quiet=true", *MINI, *overrides])
    return run_tier(cfg)


def _cases(run: Path) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in map(json.loads, (run / "cases.jsonl").read_text().splitlines())}


def _outcome(c: dict[str, Any]) -> tuple[Any, ...]:
    """pass/fail, hit@5 and recall@5; for a refusal question, whether anything was retrieved at all."""
    if c["expect_refusal"]:
        return ("refusal", bool(c["retrieved"]))
    return (c["passed"], c["metrics"]["hit@5"], c["metrics"]["recall@5"])


def _changed(a: Path, b: Path) -> int:
    """Questions in both runs whose retrieval outcome differs."""
    ca, cb = _cases(a), _cases(b)
    return sum(1 for q in ca.keys() & cb.keys() if _outcome(ca[q]) != _outcome(cb[q]))


def _section(dom: str, start: str, end: str) -> str:
    return dom[dom.index(start):dom.index(end, dom.index(start))]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_browser_lists_runs_draws_trend_and_diffs_two_runs(tmp_path: Path, data_dir: Path) -> None:
    outputs, page = tmp_path / "outputs", tmp_path / "runs.html"
    browse = [f"browse.roots=[{outputs}]", f"browse.out={page}"]
    runs = [outputs / f"t{t}" for t in THRESHOLDS]
    for t, run in zip(THRESHOLDS, runs, strict=True):
        assert _run(tmp_path, data_dir, "tier=retrieval", f"threshold={t}", f"paths.run_dir={run}", *browse) == 0
    gen = outputs / "gen"
    assert _run(tmp_path, data_dir, "tier=generation", "model=mock", "repeats=1", f"paths.run_dir={gen}",
                *browse) == 0
    # The page was refreshed by the last run itself (the after-run hook), and lists all four.
    built = page.read_text()
    assert all(f'title="{html.escape(str(r))}"' in built for r in [*runs, gen])
    # A run whose page cannot be written still succeeds: the refresh only warns.
    assert _run(tmp_path, data_dir, "tier=retrieval", f"paths.run_dir={outputs / 'late'}", f"browse.roots=[{outputs}]",
                f"browse.out={tmp_path}") == 0
    assert (outputs / "late" / "report.json").exists()
    # The command: tier=browse.
    assert _run(tmp_path, data_dir, "tier=browse", f"paths.run_dir={tmp_path / 'browse-run'}", *browse) == 0
    text = page.read_text()
    assert "<script src=" not in text and "<link" not in text
    rows = re.findall(r'<tr data-suite="mini" data-tier="(\w+)"[^>]*title="([^"]+)"', text)
    assert sorted(html.unescape(f) for _, f in rows) == sorted(str(r) for r in [*runs, gen, outputs / "late"])
    index = {html.unescape(f): i for i, (_, f) in enumerate(rows)}
    assert [t for t, _ in rows].count("retrieval") == 4
    # The links lead to each run's report.html, relative to the page.
    for run in [*runs, gen]:
        assert f'href="{Path(run.relative_to(tmp_path)) / "report.html"}"' in text

    a, b = index[str(runs[2])], index[str(runs[0])]
    expected = _changed(runs[2], runs[0])
    assert expected > 0, "the thresholds should change some questions' outcome"
    dom = chromium(tmp_path, f"file://{page}#a={a}&b={b}", "--dump-dom")
    # Trend: recall@5 is shown first, one point per retrieval run (one suite and fingerprint: one line).
    trend = _section(dom, 'data-metric="recall@5"', "</svg>")
    assert "hidden" not in trend.split(">", 1)[0]
    assert len(re.findall(r"<circle ", trend)) == 4
    assert len(re.findall(r'<path class="line"', trend)) == 1
    reports = [json.loads((r / "report.json").read_text()) for r in [*runs, outputs / "late"]]
    with_interval = sum(1 for r in reports if r["intervals"]["recall@5"]["low"] is not None)
    assert len(re.findall(r'class="yerror"', trend)) == with_interval
    # Side by side: the changed count and the highlighted rows match what the cases files say.
    shown = re.search(r'id="changed">(\d+)<', dom)
    assert shown and int(shown.group(1)) == expected
    assert len(re.findall(r'<tr class="changed"', dom)) == expected
    assert re.search(r'id="common">8<', dom)
    # A generation run against itself: every question answered, none changed.
    dom_gen = chromium(tmp_path, f"file://{page}#a={index[str(gen)]}&b={index[str(gen)]}&tier=generation",
                       "--dump-dom")
    assert re.search(r'id="changed">0<', dom_gen) and re.search(r'id="common">8<', dom_gen)
    assert re.search(r'id="shown">1<', dom_gen)  # the tier filter from the hash: one generation run
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "run-browser.png"
    chromium(tmp_path, f"file://{page}#a={a}&b={b}", f"--screenshot={shot}", "--window-size=1400,2400")
    assert shot.stat().st_size > 20_000


SCRIPT_END = "</script><img src=x onerror=alert(1)>"


def test_planted_markup_stays_text(tmp_path: Path) -> None:
    """A question, answer or document id holding markup is shown as text, in the table and the script's data."""
    case = {"id": f"q-{SCRIPT_END}", "query": SCRIPT_END, "passed": True, "metrics": {"hit@5": 1.0, "recall@5": 1.0},
            "retrieved": [{"rank": 1, "doc_id": SCRIPT_END, "chunk_id": "c", "score": 0.5, "final_score": 0.5}]}
    report = {"tier": "retrieval", "status": "ok", "overrides": [f"threshold={SCRIPT_END}"],
              "identity": {"suite": SCRIPT_END, "fingerprint": "f", "model": None},
              "metrics": {"recall@5": 1.0}, "provenance": {"created": "2026-01-01T00:00:00+00:00"}}
    entry = run_entry(report, f"{SCRIPT_END}/report.html", SCRIPT_END, 0.0)
    entry.questions = questions([decode(case)], "retrieval")
    text = build_page([entry, entry])
    assert SCRIPT_END not in text and "<img" not in text
    assert html.escape(SCRIPT_END) in text  # shown, as text
    if CHROMIUM is None:
        return
    (tmp_path / "p.html").write_text(text)
    dom = chromium(tmp_path, f"file://{tmp_path / 'p.html'}#a=0&b=1", "--dump-dom")
    assert "<img" not in dom and html.escape(SCRIPT_END) in _section(dom, '<table id="sbs"', "</table>")


def test_each_run_shows_its_gate_verdict() -> None:
    base = {"tier": "retrieval", "status": "ok", "identity": {"suite": "core", "fingerprint": "f"},
            "metrics": {"recall@5": 0.78}, "provenance": {"created": "2026-01-01T00:00:00+00:00"}}
    failed = run_entry({**base, "gate": {"verdict": "floor broken", "cause": "recall@5 0.7800 < 0.8"}}, "", "a", 0.0)
    passed = run_entry({**base, "gate": {"verdict": "pass", "cause": "4 gated metric(s) within tolerance"}}, "", "b",
                       0.0)
    unrecorded = run_entry(base, "", "c", 0.0)  # a run from before verdicts were recorded
    assert (failed.verdict, passed.verdict, unrecorded.verdict) == ("floor broken: recall@5 0.7800 < 0.8", "pass", "")
    page = build_page([failed, passed, unrecorded])
    assert '<span class="down">verdict: floor broken: recall@5 0.7800 &lt; 0.8</span>' in page
    assert '<span class="up">verdict: pass</span>' in page


def test_rebuild_skips_what_is_not_a_report(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "report.json").write_text("{not json")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "report.json").write_text("[1, 2]")
    out, n = rebuild([tmp_path, tmp_path / "missing"], tmp_path / "runs.html", limit=10)
    page = out.read_text()
    assert n == 0 and "2 skipped: " in page and "not a report" in page and "unreadable" in page


def test_a_line_that_is_no_case_record_withholds_the_runs_questions_naming_it(tmp_path: Path) -> None:
    """The page reads cases through the codec: an older case with fewer fields reads, a damaged one is named."""
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "q1", "passed": true}\n\n{"id": "q2", "passed": "yes"}\n')
    cases, why = read_cases(path)
    assert cases is None and why.startswith("cases.jsonl line 3: not a case record: 'passed'")
    path.write_text('{"id": "q1", "passed": true}\n')
    cases, why = read_cases(path)
    assert why == "" and cases is not None and [c.id for c in cases] == ["q1"]
    assert questions(cases, "retrieval") == [{"k": "q1", "id": "q1", "q": "", "shown": "(nothing retrieved)",
                                              "out": "pass", "hit": None, "rec": None}]
    older = questions([decode({"id": "g", "mode": "e2e", "passed": False})], "generation")  # it wrote no answer
    assert older is not None and (older[0]["k"], older[0]["shown"], older[0]["out"]) == ("e2e:g", "(no answer)", "fail")


def test_the_trend_is_by_date_and_commit_and_its_lines_are_named_by_suite_and_date() -> None:
    from nomad_eval.report.browser import RunEntry, trend

    def run(fp: str, when: str, commit: str | None, recall: float) -> RunEntry:
        report = {"tier": "retrieval", "status": "ok", "identity": {"suite": "core", "fingerprint": fp},
                  "metrics": {"recall@5": recall}, "provenance": {"created": when, "project_commit": commit}}
        return run_entry(report, "", fp, 0.0)

    runs = [run("a" * 16, "2026-01-01T09:00:00+00:00", "1234567890", 0.8),
            run("a" * 16, "2026-01-02T09:00:00+00:00", None, 0.9),
            run("b" * 16, "2026-01-03T10:30:00+00:00", "abcdef0123", 0.7)]
    chart = trend(runs, "recall@5")
    assert not chart.numeric_x and list(chart.x) == ["2026-01-03 10:30 abcdef0", "2026-01-01 09:00 1234567",
                                                     "2026-01-02 09:00"]
    names = [s.name for s in chart.series]
    assert names == ["core · corpus and settings as of 2026-01-03 10:30 abcdef0",
                     "core · corpus and settings as of 2026-01-01 09:00 1234567"]
    assert not any("a" * 8 in n or "b" * 8 in n for n in names)  # no fingerprint hashes in the legend
