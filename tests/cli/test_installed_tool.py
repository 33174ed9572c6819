"""The tool as a user gets it: a built wheel installed in a fresh venv, a project made by `nomad-eval init`, and
the retrieval tier, promote and compare run from that project, writing nothing outside it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import machine_venv, user_env

pytestmark = pytest.mark.slow  # builds a wheel and installs it into a fresh virtual environment


def _tree(root: Path, skip: Path | None = None) -> dict[str, float]:
    """Every file and folder under root with its mtime (folders too: a new file changes its folder's)."""
    out = {}
    for p in root.rglob("*"):
        if skip is not None and (p == skip or skip in p.parents):
            continue
        out[str(p.relative_to(root))] = p.lstat().st_mtime
    return out


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r


def test_wheel_init_run_promote_compare_write_only_into_the_project(tmp_path: Path, wheel: Path) -> None:
    env = user_env()
    venv = tmp_path / "venv"
    # The dependencies (torch, the MiniLM package) come from the machine, the tool itself only from the wheel
    # (--no-deps keeps pip offline).
    machine_venv(venv, "--without-pip")
    py, tool = venv / "bin" / "python", venv / "bin" / "nomad-eval"
    _run([str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheel)], tmp_path, env)
    where = _run([str(py), "-c", "import nomad_eval; print(nomad_eval.__file__)"], tmp_path, env).stdout.strip()
    package = Path(where).parent
    assert package.is_relative_to(venv), where  # the wheel's copy, not the checkout's
    assert (package / "conf" / "config.yaml").is_file() and (package / "scaffold").is_dir()
    assert {p.name for p in (package / "report" / "templates").glob("*.html")} >= {"report.html", "browser.html"}
    assert tool.is_file()

    before_pkg, before_tmp = _tree(package), _tree(tmp_path)
    _run([str(tool), "init", "kb"], tmp_path, env)
    kb = tmp_path / "kb"
    for rel in ("corpus/example-kettle-care.md", "goldens/core.jsonl", "conf/experiment/ci.yaml",
                ".github/workflows/nomad-eval.yml", ".gitignore"):
        assert (kb / rel).is_file(), rel
    kinds = [json.loads(line) for line in (kb / "goldens" / "core.jsonl").read_text().splitlines()]
    assert any(g["turns"] for g in kinds) and any(g["expectRefusal"] for g in kinds)
    assert any(not g["turns"] and not g["expectRefusal"] for g in kinds)

    check = _run([str(tool), "tier=corpus", "action=check"], kb, env)
    assert "3 goldens — ok" in check.stdout + check.stderr
    _run([str(tool), "quiet=true", "paths.run_dir=outputs/first"], kb, env)
    report = json.loads((kb / "outputs" / "first" / "report.json").read_text())
    assert report["status"] == "ok" and report["metrics"]["recall@5"] == 1.0
    # The project's conf/ comes before the shipped configs: its ci.yaml, not the shipped one, is composed.
    ci = _run([str(tool), "+experiment=ci", "--cfg", "job"], kb, env).stdout
    assert "recall@5: 0.8" in ci and "hit@5" not in ci
    _run([str(tool), "tier=promote", "promote.run=outputs/first"], kb, env)
    fingerprint = report["identity"]["fingerprint"]
    assert (kb / "baselines" / fingerprint / "retrieval.json").is_file()
    compared = _run([str(tool), "tier=compare", "compare.run=outputs/first"], kb, env)
    assert "verdict: pass" in compared.stdout

    assert _tree(package) == before_pkg  # nothing written into the installed package
    after_tmp = _tree(tmp_path, skip=kb)  # the venv: nothing new, nothing touched
    assert after_tmp == before_tmp, sorted(set(after_tmp.items()) ^ set(before_tmp.items()))[:10]
    assert {".nomad_eval", "outputs", "baselines"} <= {p.name for p in kb.iterdir()}
