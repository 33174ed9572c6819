"""One folder per run: with paths.run_dir set, Hydra's own files land there and nothing else is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MINI, run_cli

pytestmark = pytest.mark.slow  # runs the tool in a subprocess


def test_run_dir_holds_everything_and_the_working_dir_stays_clean(tmp_path: Path, data_dir: Path) -> None:
    cwd, run = tmp_path / "cwd", tmp_path / "run"
    cwd.mkdir()
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true", cwd=cwd)
    assert r.returncode == 0, r.stderr
    assert list(cwd.iterdir()) == []
    assert (run / "report.json").exists() and (run / ".hydra" / "config.yaml").exists()
