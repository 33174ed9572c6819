"""Sweep ranking on a lower-is-better 0/1 metric: ranked with the exact binary test, not refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.report.sweep_rank import rank_sweep


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
    result = rank_sweep(jobs, tmp_path, make_cfg(), quiet=True)
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
    result = rank_sweep(jobs, tmp_path, make_cfg())
    assert result is not None and result["left_out"] == {"2_c": f"{jobs[2] / 'cases.jsonl'} is missing"}
    assert f"ranking: 2_c left out: {jobs[2] / 'cases.jsonl'} is missing" in capsys.readouterr().err
    assert f"Left out: 2_c: {jobs[2] / 'cases.jsonl'} is missing" in (tmp_path / "ranking.md").read_text()
