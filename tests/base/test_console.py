"""Progress a person can see in a log: counted lines off a terminal, nothing when quiet or in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.base.console import progress_bar
from tests.conftest import MINI, REPO


def test_off_a_terminal_progress_is_a_counted_line(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with progress_bar("generating (mock)", 3) as prog:
        for _ in range(3):
            prog.advance(prog.task_ids[0])
    err = capsys.readouterr().err
    assert "generating (mock): 3/3 in" in err and "s each" in err
    with progress_bar("quiet", 2, quiet=True) as prog:
        prog.advance(prog.task_ids[0], 2)
    monkeypatch.setenv("CI", "true")
    with progress_bar("in ci", 2) as prog:
        prog.advance(prog.task_ids[0], 2)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_generation_run_reports_its_calls_and_its_ingest(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "nomad_eval", "tier=generation", "model=mock", "repeats=1", *MINI,
                        f"paths.data_dir={tmp_path / 'data'}", f"paths.run_dir={tmp_path / 'run'}"],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "embedding chunks: " in r.stderr          # the cold ingest counted its chunks
    assert "generating (mock): 8/8 in" in r.stderr    # 8 questions, one repeat: 8 model calls
