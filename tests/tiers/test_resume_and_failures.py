"""resume=true keeps a finished job only when task, code and config all match; a failed run never replaces a
good report."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.cli.entry import _resumable, run_tier
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow  # repeated retrieval runs and a sweep, ingesting a private store


@pytest.fixture
def own_data(tmp_path: Path) -> list[str]:
    """A copy of the fixture corpus and suite that a test may edit."""
    shutil.copytree(FIXTURES / "corpus", tmp_path / "corpus")
    shutil.copytree(FIXTURES / "goldens", tmp_path / "goldens")
    return [f"data.corpus_dir={tmp_path / 'corpus'}", f"data.goldens_dir={tmp_path / 'goldens'}", "suite=mini"]


def _resume_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("resume:")]
    assert len(lines) == 1, lines
    return lines[0]


def test_resume_keeps_a_job_only_when_everything_matches(tmp_path: Path, own_data: list[str],
                                                         make_cfg: Callable[..., DictConfig],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tier(make_cfg(*own_data)) == 0  # finished without resume: resume=true must still keep it
    report = tmp_path / "run" / "report.json"
    good = report.read_text()
    capsys.readouterr()

    assert _resumable(make_cfg(*own_data, "resume=true", "verbose=true"))  # settings that measure nothing
    assert "kept the finished results" in _resume_line(capsys)

    assert not _resumable(make_cfg(*own_data, "resume=true", "threshold=0.3"))
    assert "config differs at threshold" in _resume_line(capsys)

    goldens = tmp_path / "goldens" / "mini.jsonl"
    original = goldens.read_text()
    goldens.write_text(original.replace("How many AA cells", "How many AA batteries"))
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    line = _resume_line(capsys)
    assert "goldens hash" in line and "fingerprint" not in line
    goldens.write_text(original)

    doc = tmp_path / "corpus" / "rope-storage.md"
    text = doc.read_text()
    doc.write_text(text + "\nStore rope away from sunlight.\n")
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    line = _resume_line(capsys)
    assert "corpus fingerprint" in line and "goldens hash" not in line
    doc.write_text(text)

    old = json.loads(good)
    old["provenance"]["git_commit"] = "0123456789" * 4  # a report made by other code
    report.write_text(json.dumps(old))
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    assert re.search(r"code version 0123456789( \(dirty [0-9a-f]{16}\))? → ([0-9a-f]{10}|unknown)",
                     _resume_line(capsys))
    assert run_tier(make_cfg(*own_data, "resume=true")) == 0  # so the job runs again
    assert json.loads(report.read_text())["provenance"]["git_commit"] != old["provenance"]["git_commit"]
    assert "re-running" in _resume_line(capsys)

    assert run_tier(make_cfg(*own_data, "resume=true")) == 0
    assert "kept the finished results" in _resume_line(capsys)

    # Same commit, but a dirty tree with other uncommitted edits than now: not the same code.
    old = json.loads(report.read_text())
    old["provenance"]["git_dirty"], old["provenance"]["git_diff"] = True, "fedcba9876543210"
    report.write_text(json.dumps(old))
    assert not _resumable(make_cfg(*own_data, "resume=true"))
    assert "(dirty fedcba9876543210) →" in _resume_line(capsys)


def test_a_failed_run_leaves_an_earlier_good_report_in_place(tmp_path: Path, make_cfg: Callable[..., DictConfig],
                                                             own_data: list[str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tier(make_cfg(*own_data)) == 0
    run = tmp_path / "run"
    good = (run / "report.json").read_bytes()
    (tmp_path / "goldens" / "mini.jsonl").write_text('{"id": "broken", "query": \n')  # the next run fails
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg(*own_data))
    assert exc.value.code == 2
    assert (run / "report.json").read_bytes() == good
    failed = json.loads((run / "report.failed.json").read_text())
    assert failed["status"] == "failed" and "mini.jsonl" in failed["error"]
    assert f"the failure is recorded in {run / 'report.failed.json'}" in capsys.readouterr().err

    with pytest.raises(SystemExit):  # where no good report stands, the failure is the report, as before
        run_tier(make_cfg(*own_data, f"paths.run_dir={tmp_path / 'fresh'}"))
    assert json.loads((tmp_path / "fresh" / "report.json").read_text())["status"] == "failed"
    assert not (tmp_path / "fresh" / "report.failed.json").exists()
