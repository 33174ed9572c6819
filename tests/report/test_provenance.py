"""Provenance names the branch and the machine (as upstream's reports do), beside the commit."""

from __future__ import annotations

import platform
import subprocess

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
