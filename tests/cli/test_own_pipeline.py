"""A retriever of the user's own, `myretriever.py` beside conf/, run as `nomad-eval pipeline=mine` with no
environment variable; a target that cannot be found is refused naming the module, the folder searched and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.cli.init import init_main

RETRIEVER = """def retrieve(query, top_k):
    return [{"doc_id": "example-kettle-care", "chunk_id": "example-kettle-care#0", "score": 1.0}][:top_k]
"""
# What the console script `nomad-eval` is: a file elsewhere calling cli(), so the working directory is not on the
# import path the way `python -m` puts it there.
SCRIPT = "import sys\nfrom nomad_eval.__main__ import cli\nsys.exit(cli())\n"


def _project(tmp_path: Path, target: str) -> tuple[Path, Path]:
    kb = tmp_path / "kb"
    assert init_main([str(kb)]) == 0
    (kb / "myretriever.py").write_text(RETRIEVER)
    (kb / "conf" / "pipeline").mkdir()
    (kb / "conf" / "pipeline" / "mine.yaml").write_text(f"_target_: {target}\n_partial_: true\ntop_k: 5\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nomad-eval.py").write_text(SCRIPT)
    return kb, tmp_path / "bin" / "nomad-eval.py"


def _run(script: Path, kb: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NOMAD_EVAL_PROJECT"}
    return subprocess.run([sys.executable, str(script), *args], cwd=kb, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow  # runs the tool
def test_a_retriever_beside_conf_is_found_without_pythonpath(tmp_path: Path) -> None:
    kb, script = _project(tmp_path, "myretriever.retrieve")
    r = _run(script, kb, "pipeline=mine", "quiet=true", "paths.run_dir=outputs/mine")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (kb / "outputs" / "mine" / "report.json").is_file()


@pytest.mark.parametrize(("target", "says"), [("theirretriever.retrieve", "no module `theirretriever`"),
                                              ("myretriever.retreive", "has no `retreive`")])
def test_a_target_that_cannot_be_found_names_module_folder_and_fix(tmp_path: Path, target: str, says: str) -> None:
    kb, script = _project(tmp_path, target)
    r = _run(script, kb, "pipeline=mine", "quiet=true", "paths.run_dir=outputs/mine")
    assert r.returncode == 2, r.stdout + r.stderr
    err = " ".join(r.stderr.split())  # rich wraps long lines
    assert says in err and f"searched the project folder {kb.resolve()}" in err
    assert "beside conf/" in err and "Error locating target" not in err
