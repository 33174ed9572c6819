"""A run that writes no results leaves no folder; a run with results keeps its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, MINI, run_cli

pytestmark = pytest.mark.slow  # runs the tool in subprocesses


def test_a_corpus_check_leaves_no_outputs_folder_and_a_run_keeps_its_own(tmp_path: Path, data_dir: Path) -> None:
    check = run_cli("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}",
                    f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert not (tmp_path / "outputs").exists()
    run = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", "quiet=true", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    reports = list((tmp_path / "outputs").glob("*/*/report.json"))
    assert len(reports) == 1
