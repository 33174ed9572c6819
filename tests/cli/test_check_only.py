"""A corpus check writes nothing: it runs without Hydra's job machinery (cli/check_only.py), and a command line
that Hydra must judge is still judged by Hydra."""

from __future__ import annotations

from pathlib import Path

from nomad_eval.cli.check_only import check_only
from tests.conftest import MINI, run_cli


def test_a_check_makes_no_run_folder_and_says_what_it_found(tmp_path: Path) -> None:
    r = run_cli("tier=corpus", "action=check", *MINI, f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "suite mini: 8 goldens — ok" in r.stdout
    assert not (tmp_path / "run").exists()  # no .hydra copies, no job log: nothing to make and remove


def test_a_credential_typed_on_a_check_is_warned_about(tmp_path: Path) -> None:
    r = run_cli("tier=corpus", "action=check", *MINI, "model=openai", "model.api_key=sk-abcdefghijklmnopqrstuv")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "model.api_key holds a credential typed out on the command line" in r.stderr


def test_a_check_hydra_refuses_is_refused_by_hydra() -> None:
    r = run_cli("tier=corpus", "action=check", "suite=core,off_topic")
    assert r.returncode == 2  # the command line is wrong: Hydra's own exit 1 would read as "worse"
    assert "Ambiguous value for argument 'suite=core,off_topic'" in r.stderr


def test_a_check_of_several_suites_is_refused_as_before() -> None:
    r = run_cli("tier=corpus", "action=check", "suite=[core,off_topic]")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "tier=corpus takes one suite" in r.stderr


def test_only_a_plain_check_or_lint_skips_hydra_main() -> None:
    assert check_only(["tier=corpus", "action=check", "hydra.run.dir=/tmp/x"])
    assert check_only(["action=lint"])
    assert not check_only(["tier=corpus", "action=ingest"])
    assert not check_only(["tier=corpus", "action=check", "-m"])
    assert not check_only(["tier=corpus", "action=check", "--cfg", "job"])
    assert not check_only(["tier=corpus", "action=check", "hydra.job.chdir=true"])
    assert not check_only(["tier=corpus", "action=check", "hydra/job_logging=none"])
