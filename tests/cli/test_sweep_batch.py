"""Hydra's basic sweeper checks a whole batch before any job of it runs."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MINI, run_cli


def test_a_batch_with_a_bad_job_fails_before_any_job_runs(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli(f"paths.data_dir={tmp_path / 'data'}", *MINI, "quiet=true", "pipeline=default,no-such-pipeline",
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 1
    assert "no-such-pipeline" in r.stderr
    assert not [p for p in sweep.iterdir() if p.is_dir()]  # not even the first, valid job ran
