"""Output a person can act on: stderr starts with the verdict's cause, the console lists the gated metrics only,
the small-suite note is shown once per project state, and junit.xml carries rounded values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO
from nomad_eval.gate.store import promote
from tests.conftest import MINI, run_in_process

GEN = ("tier=generation", "model=mock", "mode=e2e", *MINI)


def _cli(*args: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"HF_HUB_OFFLINE": "1"} | ({"CI": "1"} if ci else {})
    return subprocess.run([sys.executable, "-m", "nomad_eval", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.slow
def test_a_regression_leads_stderr_with_its_cause_and_lists_only_gated_metrics(tmp_path: Path,
                                                                               data_dir: Path) -> None:
    base = tmp_path / "base"
    assert run_in_process(*GEN, f"paths.data_dir={data_dir}", f"paths.run_dir={base}", "quiet=true") == 0
    baselines = tmp_path / "baselines"
    promote(base, baselines)
    # Nothing retrieved: the extractive mock declines every answerable question.
    worse = (*GEN, "threshold=0.99", f"paths.data_dir={data_dir}", f"paths.baselines_dir={baselines}",
             "compare.after_run=true", "compare.junit=junit.xml")
    runs = [_cli(*worse, f"paths.run_dir={tmp_path / name}", ci=ci) for name, ci in (("a", False), ("b", True))]
    for r in runs:
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        assert r.stderr.splitlines()[0].startswith("regression: e2e.correctness worse: "), r.stderr
        assert "lower is better" in r.stderr or "higher is better" in r.stderr
        assert "generating" not in r.stderr  # progress is not stderr's business (in CI a short run prints none)
        table = r.stdout[r.stdout.index("compare against baseline"):]
        assert "not gated" not in table.split("metric(s) not gated")[0]
        assert re.search(r"\d+ metric\(s\) not gated: in the run's report.md and report.html", r.stdout)
    assert "generating (mock): 8/8" in runs[0].stdout
    # The small-suite note: on the console the first time for this baseline and these questions, then only in
    # the report, which holds it every time.
    assert "small suite (" in runs[0].stdout and "small suite (" not in runs[1].stdout
    assert "small suite (" in (tmp_path / "b" / "report.md").read_text()
    note = next(x for x in runs[0].stdout.splitlines() if "small suite (" in x)
    assert len(note) < 300
    page = (tmp_path / "b" / "report.html").read_text()  # the question table marks what failed since the baseline
    assert "<th>since the baseline</th>" in page and "<tr class='fail new'" in page and ">new failure<" in page
    junit = (tmp_path / "b" / "junit.xml").read_text()
    assert not re.search(r"\d\.\d{5,}", junit), junit  # every value rounded as the reports show it


def test_a_run_with_nothing_gated_says_so(tmp_path: Path, data_dir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run_in_process(*GEN, f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'r'}") == 0
    last = [x for x in capsys.readouterr().out.splitlines() if x.strip()][-1]
    assert last.startswith("verdict: pass: nothing gated: no floor and no baseline")


def test_charts_a_person_can_read() -> None:
    from nomad_eval.report.html_charts import metric_at_k, tag_bars
    from nomad_eval.report.schema import MetricInterval
    from nomad_eval.report.svg import Panels, render

    metrics = {f"{f}@{k}": 0.5 + 0.1 * k for f in ("recall", "ndcg", "hit") for k in (1, 3, 5)}
    fig = metric_at_k(metrics)
    assert isinstance(fig, Panels) and [c.title.split("@")[0] for c in fig.charts] == ["hit", "ndcg", "recall"]
    assert all(len(c.series) == 1 for c in fig.charts)  # one line per plot, not every family over each other
    by_tag = {"numeric": {"recall@5": 1.0}, "refusal": {"recall@5": None}}
    iv = {"numeric": {"recall@5": MetricInterval(n=6, low=0.6, high=1.0)}}
    tags = tag_bars(by_tag, ["recall@5"], iv)
    assert tags.x == ["numeric (n=6)"] and "not shown, no question measures them: refusal" in tags.title
    assert "refusal (n=" not in render(tags, "chart-tags")


def test_the_header_names_only_settings_the_run_has() -> None:
    from nomad_eval.report.details import GenerationDetails
    from nomad_eval.report.html_writer import _meta
    from nomad_eval.report.schema import Identity, Report

    ident = Identity(fingerprint="f", goldens_hash="g", suite="core", top_k=None, threshold=None,
                     embedder="(the app's own)", model="support-bot", pipeline="app:http")
    meta = _meta(Report(tier="generation", identity=ident))
    assert "None" not in meta and "model support-bot" in meta and "top_k" not in meta
    why = "temperature 0 and the backend is not known to vary"
    meta = _meta(Report(tier="generation", identity=ident, counts={"repeats": 1},
                        details=GenerationDetails(repeats_reason=why)))
    assert f"repeats 1 ({why})" in meta  # why each prompt got one answer
