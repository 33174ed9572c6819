"""A real sweep of four retrieval configurations answered end to end: τ of each retrieval metric against answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig
from scipy import stats

from nomad_eval.gate.verdict import verdict_for
from nomad_eval.report.baseline import Baseline, load_run
from nomad_eval.report.sweep_summary import PREDICTORS_FILE
from tests.conftest import MINI, run_cli
from tests.typed_config import compare_settings

pytestmark = pytest.mark.slow  # its fixture runs a generation sweep

METRICS = ("e2e.recall@5", "e2e.mrr@5", "e2e.ndcg@5")
# On the fixture corpus these cut first a follow-up's weak passage, then a multi-hop's second document, then
# the strong ones: retrieval and the mock's answers fall together.
THRESHOLDS = "0.25,0.45,0.6,0.7"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, shared_data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("rva") / "sweep"
    data = out.parent / "data"
    data.mkdir()
    cache = shared_data_dir / "embeddings.sqlite"
    if cache.exists():  # the session's warm embeddings, so MiniLM embeds nothing twice
        (data / "embeddings.sqlite").write_bytes(cache.read_bytes())
    r = run_cli("tier=generation", "mode=e2e", "model=mock", "repeats=1", f"threshold={THRESHOLDS}", *MINI,
                f"paths.data_dir={data}", "stats.resamples=500", "quiet=true", f"hydra.sweep.dir={out}", "-m")
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _jobs(sweep: Path) -> list[Path]:
    return sorted(p for p in sweep.iterdir() if (p / "report.json").exists())


def test_summary_holds_tau_for_each_retrieval_metric_equal_to_scipy_on_report_means(sweep: Path) -> None:
    result = json.loads((sweep / PREDICTORS_FILE).read_text())
    (group,) = result["groups"]
    rows = {r["metric"]: r for r in group["rows"]}
    assert set(METRICS) <= set(rows)
    reports = [json.loads((d / "report.json").read_text()) for d in _jobs(sweep)]
    assert len(reports) == 4 and sorted(group["jobs"]) == sorted(d.name for d in _jobs(sweep))
    answers = [r["metrics"]["e2e.correctness"] for r in reports]
    assert len(set(answers)) > 1  # the sweep moved answers, or τ would be undefined
    for name in METRICS:
        row = rows[name]
        expected = stats.kendalltau([r["metrics"][name] for r in reports], answers).statistic
        assert row["tau"] == pytest.approx(expected, abs=1e-12)
        assert row["tau"] > 0  # the mock answers from what it is given: more retrieved, more answered
        assert row["low"] is not None and row["low"] <= row["tau"] <= row["high"]
        assert row["n_jobs"] == 4 and row["n_questions"] == 7  # the refusal question has neither number
        assert row["resamples"] == 500 and 0 < row["defined"] <= 500
    md = (sweep / "summary.md").read_text()
    assert "## Which retrieval metric predicts answers" in md
    assert all(f"| {name} | {rows[name]['tau']:+.3f} |" in md for name in METRICS)
    html = (sweep / "report.html").read_text()
    assert "Which retrieval metric predicts answers" in html and f"{rows['e2e.recall@5']['tau']:+.3f}" in html


def test_retrieval_metrics_are_ungated_and_not_measured_against_an_older_baseline(
        sweep: Path, make_cfg: Callable[..., DictConfig]) -> None:
    job = _jobs(sweep)[0]
    report, cases = load_run(job)
    assert cases is not None and report.intervals["e2e.recall@5"].n == 7
    # An older generation baseline: the same run without the retrieval metrics it did not yet record.
    old_cases = [c.model_copy(update={"metrics": {k: v for k, v in c.metrics.items() if k.k is None}}) for c in cases]
    old = report.model_copy(update={"metrics": {k: v for k, v in report.metrics.items() if "@" not in k}})
    v = verdict_for(report, cases, Baseline(promoted_from="old", promoted_at="", report=old, cases=old_cases),
                    compare_settings(make_cfg(*MINI, "tier=generation", "mode=e2e")))
    assert not v.refused and v.exit_code == 0
    rows = {m.name: m for m in v.metrics}
    assert rows["e2e.correctness"].gated and rows["e2e.correctness"].outcome == "within tolerance"
    for name in METRICS:
        assert not rows[name].gated and rows[name].outcome == "not measured"
        assert rows[name].baseline is None and rows[name].current == report.metrics[name]
