"""A gated sweep gates like a run: it exits with its worst job's code, its summary says each job's verdict, and the
ranking is against the baseline, naming the best setting."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import MINI, run_cli

pytestmark = pytest.mark.slow  # runs the tool in subprocesses


def test_a_sweep_with_a_regressing_job_exits_1_and_says_so(tmp_path: Path, data_dir: Path) -> None:
    common = [*MINI, f"paths.data_dir={data_dir}", f"paths.baselines_dir={tmp_path / 'b'}", "quiet=true"]
    assert run_cli(*common, f"paths.run_dir={tmp_path / 'main'}").returncode == 0
    assert run_cli("tier=promote", f"promote.run={tmp_path / 'main'}", *common).returncode == 0
    sweep = tmp_path / "sweep"
    r = run_cli(*common, "compare.after_run=true", "threshold=0.25,0.9", f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "sweep: exit 1: job 1 regression" in r.stderr
    df = pl.read_parquet(sweep / "summary.parquet").sort("job")
    assert df["status"].to_list() == ["pass", "regression"] and df["exit_code"].to_list() == [0, 1]
    ranking = json.loads((sweep / "ranking.json").read_text())
    assert ranking["reference"].startswith("baseline ") and ranking["best"]["job"].startswith("0_")
    assert "best setting: job 0 (threshold=0.25), verdict pass" in (sweep / "summary.md").read_text()
    assert "best setting: job 0" in (sweep / "report.html").read_text()
