"""`suite=[a,b]` (upstream's `--suite a,b`): one run per suite in its own folder, then one verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, run_in_process


@pytest.mark.slow
def test_several_suites_give_per_suite_results_and_the_worst_verdict(tmp_path: Path, data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", goldens)
    lines = (FIXTURES / "goldens" / "mini.jsonl").read_text().splitlines(keepends=True)
    (goldens / "mini3.jsonl").write_text("".join(lines[:3]))
    args = ["tier=retrieval", f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={goldens}",
            f"paths.data_dir={data_dir}", "quiet=true"]
    # mini's recall@1 is 13 of 14 relevant documents (0.93): below the floor; mini3's three questions hold it.
    out = tmp_path / "run"
    r = run_cli(*args, "suite=[mini,mini3]", f"paths.run_dir={out}", "gate.fail_under={recall@1:0.95}")
    assert r.returncode == 1, r.stdout + r.stderr
    last = [x for x in r.stdout.splitlines() if x.strip()][-1]
    assert last == "verdict: floor broken: mini floor broken, mini3 pass"
    summary = json.loads((out / "suites.json").read_text())
    assert summary["exit_code"] == 1
    rows = [(s["suite"], s["exit_code"], s["questions"]) for s in summary["suites"]]
    assert rows == [("mini", 1, 8), ("mini3", 0, 3)]
    for name in ("mini", "mini3"):
        report = json.loads((out / name / "report.json").read_text())
        assert report["identity"]["suite"] == name
    assert summary["suites"][1]["metrics"]["recall@1"] == 1.0

    # A tag picks questions across the suites: a suite with none of them is skipped, not refused (in-process:
    # what the runs print is tested here; the command line's exit and last line above).
    capsys.readouterr()
    assert run_in_process(*args, "suite=[mini,mini3]", f"paths.run_dir={tmp_path / 'tagged'}", "tags=[safety]") == 0
    out = capsys.readouterr().out
    assert "suite mini3: no question carries any of tags=['safety']; skipped" in out
    assert [x for x in out.splitlines() if x.strip()][-1] == "verdict: pass: mini pass, mini3 skipped"
    assert run_in_process(*args, "suite=[mini,mini3]", f"paths.run_dir={tmp_path / 'none'}", "tags=[multiturn]") == 2
    assert "did you mean 'multi-turn'?" in capsys.readouterr().err  # no suite has it: each refuses it

    # A misspelt name among them is refused before any suite runs (a setting's typo: 2, with the nearest name).
    typo = tmp_path / "typo"
    r = run_cli(*args, "suite=[mini,mnii3]", f"paths.run_dir={typo}")
    assert r.returncode == 2 and "no suite named 'mnii3'; did you mean 'mini3'?" in r.stderr
    assert not (typo / "mini").exists()


@pytest.mark.slow
def test_each_suite_is_gated_against_the_baseline_promoted_for_it(tmp_path: Path, data_dir: Path) -> None:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", goldens)
    lines = (FIXTURES / "goldens" / "mini.jsonl").read_text().splitlines(keepends=True)
    (goldens / "mini3.jsonl").write_text("".join(lines[:3]))
    baselines = tmp_path / "baselines"
    args = ["tier=retrieval", f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={goldens}",
            f"paths.data_dir={data_dir}", f"paths.baselines_dir={baselines}", "quiet=true"]
    first = tmp_path / "first"
    # The runs promoted are made in-process; the gated run below is the command under test.
    assert run_in_process(*args, "suite=[mini,mini3]", f"paths.run_dir={first}") == 0
    # One corpus, one fingerprint: the second suite's baseline is filed as a variant named after it.
    for name, extra in (("mini", []), ("mini3", ["promote.variant=mini3"])):
        assert run_in_process("tier=promote", f"promote.run={first / name}", f"paths.baselines_dir={baselines}",
                              "quiet=true", *extra) == 0
    again = run_cli(*args, "suite=[mini,mini3]", f"paths.run_dir={tmp_path / 'again'}", "compare.after_run=true")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [x for x in again.stdout.splitlines() if x.strip()][-1] == "verdict: pass: mini pass, mini3 pass"
    assert "retrieval-mini3.json" in again.stdout and "retrieval.json" in again.stdout
