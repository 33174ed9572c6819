"""Sweep ranking on a lower-is-better 0/1 metric: ranked with the exact binary test, not refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.config.sweep import sweep_settings
from nomad_eval.report.sweep_rank import rank_sweep
from tests.typed_config import typed


def _job(sweep: Path, name: str, empty_on_refusal: list[int]) -> Path:
    d = sweep / name
    d.mkdir(parents=True)
    (d / "report.json").write_text(json.dumps({"status": "ok", "tier": "retrieval"}))
    cases = [{"id": f"r{i}", "metrics": {"nonEmptyRateOnRefusal": float(v), "recall@5": None}, "passed": None}
             for i, v in enumerate(empty_on_refusal)]
    (d / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return d


def test_a_lower_is_better_binary_metric_is_ranked(tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    # The second configuration returns passages for 10 more of 30 out-of-corpus questions: worse, and clearly so.
    base = [0] * 30
    worse = [1] * 10 + [0] * 20
    jobs = [_job(tmp_path, "0_a", base), _job(tmp_path, "1_b", worse)]
    result = rank_sweep(jobs, tmp_path, sweep_settings(typed(make_cfg())), quiet=True)
    assert result is not None
    row = result["metrics"]["nonEmptyRateOnRefusal"]["rows"][0]
    assert result["metrics"]["nonEmptyRateOnRefusal"]["n"] == 30
    assert row["job"] == "1_b" and abs(row["delta"] - 10 / 30) < 1e-12  # reported on the metric's own scale
    assert row["p"] < 0.01 and row["real"] is True


def test_a_job_that_cannot_be_ranked_is_named_not_dropped(tmp_path: Path, make_cfg: Callable[..., DictConfig],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    jobs = [_job(tmp_path, "0_a", [0] * 30), _job(tmp_path, "1_b", [1] * 10 + [0] * 20),
            _job(tmp_path, "2_c", [0] * 30)]
    (jobs[2] / "cases.jsonl").unlink()  # its files went missing after it finished
    result = rank_sweep(jobs, tmp_path, sweep_settings(typed(make_cfg())))
    assert result is not None and result["left_out"] == {"2_c": f"{jobs[2] / 'cases.jsonl'} is missing"}
    assert f"ranking: 2_c left out: {jobs[2] / 'cases.jsonl'} is missing" in capsys.readouterr().err
    assert f"Left out: 2_c: {jobs[2] / 'cases.jsonl'} is missing" in (tmp_path / "ranking.md").read_text()


def _gated(sweep: Path, name: str, recalls: list[float], verdict: str, baseline: Path | None,
           overrides: list[str]) -> Path:
    d = sweep / name
    d.mkdir(parents=True)
    gate = {"verdict": verdict, "cause": "c", "exit_code": 0 if verdict == "pass" else 1, "metrics": [{}],
            "baseline": None if baseline is None else str(baseline)}
    (d / "report.json").write_text(json.dumps({"status": "ok", "tier": "retrieval", "gate": gate,
                                               "overrides": overrides}))
    cases = [{"id": f"q{i}", "metrics": {"recall@5": v}, "passed": v == 1.0} for i, v in enumerate(recalls)]
    (d / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return d


def test_a_gated_sweep_is_ranked_against_its_baseline_and_names_the_best_passing_setting(
        tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    base = [1.0] * 20 + [0.0] * 10
    baseline = _job(tmp_path / "baselines", "run", []) / "report.json"  # a run folder stands in for a baseline
    (baseline.parent / "cases.jsonl").write_text("".join(json.dumps(
        {"id": f"q{i}", "metrics": {"recall@5": v}, "passed": v == 1.0}) + "\n" for i, v in enumerate(base)))
    sweep = tmp_path / "sweep"
    better = [1.0] * 30  # better than the baseline, but its gate failed (on another metric, say)
    jobs = [_gated(sweep, "0_t-0.2", better, "regression", baseline, ["threshold=0.2"]),
            _gated(sweep, "1_t-0.3", [1.0] * 22 + [0.0] * 8, "pass", baseline, ["threshold=0.3", "quiet=true"]),
            _gated(sweep, "2_t-0.4", [1.0] * 10 + [0.0] * 20, "regression", baseline, ["threshold=0.4"])]
    result = rank_sweep(jobs, sweep, sweep_settings(typed(make_cfg())), quiet=True)
    assert result is not None and result["reference"] == f"baseline {baseline}"
    rows = {r["job"]: r for r in result["metrics"]["recall@5"]["rows"]}
    assert set(rows) == {"0_t-0.2", "1_t-0.3", "2_t-0.4"}  # every job, none of them the reference
    assert abs(rows["2_t-0.4"]["delta"] + 10 / 30) < 1e-12
    best = result["best"]
    assert (best["job"], best["settings"], best["verdict"]) == ("1_t-0.3", "threshold=0.3", "pass")
    assert best["chosen_from"] == "jobs whose gate passed" and best["evidence"][0]["metric"] == "recall@5"
    md = (sweep / "ranking.md").read_text()
    assert "best setting: job 1 (threshold=0.3), verdict pass: recall@5 +0.0667" in md
    assert "| 2_t-0.4 | regression | -0.3333 |" in md
    # compare.reference names a job: ranked against it instead, and it is a candidate itself (delta 0).
    named = rank_sweep(jobs, sweep, sweep_settings(typed(make_cfg("compare.reference=1"))), quiet=True)
    assert named is not None and named["reference"] == "1_t-0.3" and named["best"]["job"] == "1_t-0.3"


def test_a_sweep_row_says_each_jobs_verdict_and_exit_code(tmp_path: Path) -> None:
    from nomad_eval.report.merge import job_exit_code, job_status

    assert (job_status({"status": "ok"}), job_exit_code({"status": "ok"})) == ("ok", 0)  # not gated
    nothing = {"status": "ok", "gate": {"verdict": "pass", "exit_code": 0, "metrics": [], "floors": []}}
    assert job_status(nothing) == "ok"  # nothing was gated: not a "pass"
    regressed = {"status": "ok", "gate": {"verdict": "regression", "exit_code": 1}}
    assert (job_status(regressed), job_exit_code(regressed)) == ("regression", 1)
    assert (job_status({"status": "failed"}), job_exit_code({"status": "failed"})) == ("failed", 2)
