"""Provenance names the branch and the machine (as upstream's reports do), beside the commit."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

from nomad_eval.base.paths import CHECKOUT
from nomad_eval.report.markdown import retrieval_markdown
from nomad_eval.report.provenance import provenance
from nomad_eval.report.schema import Report


def test_provenance_holds_the_branch_and_the_platform() -> None:
    p = provenance()
    assert p.platform == {"os": platform.system(), "os_release": platform.release(),
                          "cpu_architecture": platform.machine()}
    if CHECKOUT is None or p.git_commit is None:
        assert p.git_branch is None  # not a checkout: nothing to name
        return
    head = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=CHECKOUT, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert p.git_branch == (None if head == "HEAD" else head)  # CI checks out a detached commit: no branch


def test_report_md_names_branch_and_machine() -> None:
    p = provenance().model_copy(update={"git_commit": "abc123", "git_dirty": False, "git_branch": "feature/x",
                                        "platform": {"os": "Linux", "cpu_architecture": "aarch64"},
                                        "python": "3.12.1", "created": "2026-01-02T03:04:05+00:00"})
    md = retrieval_markdown(Report(tier="retrieval", provenance=p))
    assert "- commit `abc123` on branch `feature/x`, created 2026-01-02T03:04:05+00:00, Linux aarch64, Python 3.12.1" \
        in md


def test_a_report_names_the_projects_own_commit_and_the_tools_version(tmp_path: Path) -> None:
    from nomad_eval.report.provenance import code_line

    project = tmp_path / "kb"
    project.mkdir()
    outside = provenance(project)
    assert (outside.project_commit, outside.project_branch, outside.project_dirty) == (None, None, None)
    assert code_line(outside).startswith("project not in a git repository · nomad-eval ")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "kb-main"], cwd=project, check=True)
    (project / "corpus.md").write_text("one\n")
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=project, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True,
                          check=True).stdout.strip()
    clean = provenance(project)
    assert (clean.project_commit, clean.project_branch, clean.project_dirty) == (head, "kb-main", False)
    (project / "corpus.md").write_text("two\n")
    dirty = provenance(project)
    assert dirty.project_dirty is True
    assert code_line(dirty).startswith(f"project commit {head[:10]} on branch kb-main (dirty) · nomad-eval ")
    md = retrieval_markdown(Report(tier="retrieval", provenance=dirty))
    assert f"- project commit {head[:10]} on branch kb-main (dirty) · nomad-eval" in md
