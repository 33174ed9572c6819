"""Start-up stays light: --help and the corpus check import neither torch nor a Qdrant client."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nomad_eval.base.paths import REPO

HEAVY = ("torch", "qdrant_client", "sentence_transformers", "xllamacpp")


@pytest.mark.parametrize("args", [["--help"], ["tier=corpus", "action=check"]])
def test_no_heavy_imports(args: list[str]) -> None:
    code = ("import sys, runpy; sys.argv = ['nomad_eval', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('nomad_eval', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, *args, "hydra.run.dir=/tmp/nomad-startup-test"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert "LOADED []" in r.stdout, r.stdout[-500:] + r.stderr[-500:]
