"""Progress a person can see in a log: counted lines off a terminal, nothing when quiet or in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.markup import escape
from rich.table import Table

from nomad_eval.base.console import LineProgress, console, err_console, progress_bar
from tests.conftest import MINI, REPO


def test_off_a_terminal_progress_is_a_counted_line(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with progress_bar("generating (mock)", 3) as prog:
        for _ in range(3):
            prog.advance(prog.task_ids[0])
    out = capsys.readouterr().out  # with the run's other lines: stderr is for what to act on
    assert "generating (mock): 3/3 in" in out and "s each" in out
    with progress_bar("quiet", 2, quiet=True) as prog:
        prog.advance(prog.task_ids[0], 2)
    monkeypatch.setenv("CI", "true")
    with progress_bar("in ci", 2) as prog:
        prog.advance(prog.task_ids[0], 2)
    assert capsys.readouterr().out == ""


def test_a_long_quiet_run_still_shows_a_line_a_minute(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for quiet, ci in ((True, None), (False, "true")):
        if ci:
            monkeypatch.setenv("CI", ci)
        with progress_bar("embedding questions", 100_000, quiet=quiet) as prog:
            assert isinstance(prog, LineProgress) and prog.every == 60
            prog.advance(prog.task_ids[0], 10)
            assert capsys.readouterr().out == ""  # under a minute: nothing yet
            prog.last -= 61  # a minute has gone by since the last line
            prog.advance(prog.task_ids[0], 10)
            assert "embedding questions: 20/100000 in" in capsys.readouterr().out
            prog.advance(prog.task_ids[0], 99_980)
            assert "embedding questions: 100000/100000 in" in capsys.readouterr().out  # and the end of it


def test_control_characters_never_reach_the_terminal() -> None:
    evil = "mini-01\x1b]0;owned\x07\x1b[2J\x9b31m"
    table = Table()
    table.add_column("id")
    table.add_row(evil)
    for c in (console, err_console):
        with c.capture() as cap:
            c.print(f"went from pass to fail: {evil}", markup=False)
            c.print(f"[red]error:[/] {escape(evil)}")
            c.print(table)
        out = cap.get()
        assert not any(ch in out for ch in "\x1b\x07\x9b"), repr(out)
        assert "mini-01\u241b]0;owned" in out


@pytest.mark.slow
def test_a_generation_run_reports_its_calls_and_its_ingest(tmp_path: Path, data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "nomad_eval", "tier=generation", "model=mock", "repeats=1", *MINI,
                        f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}"],
                       cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "embedding chunks: " in r.stdout          # the cold ingest counted its chunks
    assert "generating (mock): 8/8 in" in r.stdout    # 8 questions, one repeat: 8 model calls
    assert "generating" not in r.stderr and "loading" not in r.stderr  # stderr: what to act on
