"""A sweep over a group's options is checked as a whole before any job of it runs."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import MINI, run_cli


def test_a_batch_with_a_bad_job_fails_before_any_job_runs(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli(f"paths.data_dir={tmp_path / 'data'}", *MINI, "quiet=true", "pipeline=default,no-such-pipeline",
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 2  # refused (an invalid value), before Hydra's sweeper
    assert "pipeline has no option `no-such-pipeline`" in r.stderr
    assert not sweep.exists()  # not even the first, valid job ran
