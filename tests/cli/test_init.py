"""`nomad-eval init` on a new and on an existing project, and commands started outside any project."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.cli.init import init_main
from nomad_eval.cli.where import NOT_A_PROJECT, outside_project


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_twice_changes_nothing_and_a_deleted_example_stays_deleted(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb"
    assert init_main([str(kb)]) == 0
    assert (kb / "corpus" / "example-kettle-care.md").is_file()
    (kb / "corpus" / "example-kettle-care.md").unlink()
    (kb / "corpus" / "mine.md").write_text("# Mine\n\nThe user's own document.\n")
    (kb / ".gitignore").unlink()  # something init writes, deleted: it is missing, so it comes back
    before = _snapshot(kb)
    capsys.readouterr()
    assert init_main([str(kb)]) == 0
    out = capsys.readouterr().out
    after = _snapshot(kb)
    assert set(after) - set(before) == {".gitignore"}
    assert all(after[k] == v for k, v in before.items())
    assert "not added  " + str(kb / "corpus" / "example-kettle-care.md") in out
    assert "left alone " + str(kb / "goldens" / "core.jsonl") in out
    again = _snapshot(kb)
    assert init_main([str(kb)]) == 0
    assert _snapshot(kb) == again and "nothing changed" in capsys.readouterr().out


def test_the_workflow_names_the_source_given(tmp_path: Path) -> None:
    assert init_main([str(tmp_path / "kb"), "--source", "git+https://example.org/nomad-eval@0123abc"]) == 0
    workflow = (tmp_path / "kb" / ".github" / "workflows" / "nomad-eval.yml").read_text()
    assert 'NOMAD_EVAL_SOURCE: "git+https://example.org/nomad-eval@0123abc"' in workflow
    assert "==0.1.0" not in workflow and "--index-url https://download.pytorch.org/whl/cpu" in workflow


@pytest.mark.parametrize("args", [[], ["action=status"], ["tier=corpus", "action=check"]])
def test_a_command_outside_a_project_writes_nothing_and_exits_2(tmp_path: Path, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NOMAD_EVAL_PROJECT"}
    r = subprocess.run([sys.executable, "-m", "nomad_eval", *args], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert NOT_A_PROJECT in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_printing_commands_and_explicit_data_folders_do_not_need_a_project(tmp_path: Path) -> None:
    assert outside_project(["--help"], tmp_path) is None
    assert outside_project(["--cfg", "job"], tmp_path) is None
    assert outside_project(["data.corpus_dir=/x", "data.goldens_dir=/y"], tmp_path) is None
    assert outside_project(["threshold=0.3"], tmp_path) is not None
    (tmp_path / "goldens").mkdir()
    assert outside_project(["threshold=0.3"], tmp_path) is None
