"""Start-up stays light: --help and the corpus check import no model stack, no store engine and no numerics."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO
from tests.conftest import MINI, run_cli

HEAVY = ("torch", "scipy", "sentence_transformers", "transformers", "qdrant_edge", "qdrant_client", "polars",
         "xllamacpp", "numpy")


def _loaded(code: str, *args: str) -> str:
    """Which of HEAVY the code imported, as `-X importtime` lists them while they load (a corpus check ends its
    process without the interpreter's teardown, so nothing could look at sys.modules after it)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *args], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "nomad_eval" in names, r.stdout[-500:] + r.stderr[-2000:]
    return str(sorted(m for m in HEAVY if m in names))


# `--help` alone is answered without Hydra (cli/help.py); with an override it is Hydra's own page.
@pytest.mark.parametrize("args", [["--help"], ["--help", "hydra.run.dir=/tmp/nomad-startup-test"],
                                  ["tier=corpus", "action=check", "hydra.run.dir=/tmp/nomad-startup-test"]])
def test_no_heavy_imports(args: list[str]) -> None:
    assert _loaded(RUN, *args) == "[]"


RUN = ("import sys, runpy; sys.argv = ['nomad_eval', *sys.argv[1:]]\n"
       "try:\n    runpy.run_module('nomad_eval', run_name='__main__')\n"
       "except SystemExit:\n    pass")


@pytest.mark.slow
def test_a_warm_retrieval_run_loads_no_model_stack(tmp_path: Path, data_dir: Path) -> None:
    """Every chunk and query vector cached and the store filled: the run reads vectors, so torch, transformers
    and sentence-transformers never load."""
    args = ["tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'run'}", "quiet=true"]
    first = run_cli(*args)  # fills the store and the embedding cache
    assert first.returncode == 0, first.stderr[-2000:]
    loaded = set(ast.literal_eval(_loaded(RUN, *args)))
    assert "qdrant_edge" in loaded and not loaded & {"torch", "transformers", "sentence_transformers"}, loaded
    assert not _browse(tmp_path) & {"scipy", "torch", "polars", "qdrant_edge"}
    assert 'href="run/report.html"' in (tmp_path / "runs.html").read_text()  # the page lists that run


def test_importing_the_entry_points_loads_nothing_heavy() -> None:
    assert _loaded("import sys\nimport nomad_eval.__main__, nomad_eval.cli.entry, nomad_eval.cli.callbacks") == "[]"


def test_the_public_api_loads_on_first_use() -> None:
    code = ("import sys, nomad_eval\nprint('PYDANTIC', 'pydantic' in sys.modules)\n"
            "from nomad_eval import Golden, evaluate\nfrom nomad_eval.core import evaluate as e\n"
            "from nomad_eval.data.golden import Golden as G\nprint('SAME', Golden is G and evaluate is e)")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "PYDANTIC False" in r.stdout and "SAME True" in r.stdout, r.stdout + r.stderr[-2000:]


def _browse(root: Path) -> set[str]:
    """What `tier=browse` over `root` loads of HEAVY; the page it writes is `root/runs.html`."""
    out = _loaded(RUN, "tier=browse", f"browse.roots=[{root}]", f"browse.out={root / 'runs.html'}",
                  f"hydra.run.dir={root / 'hydra'}")
    assert (root / "runs.html").is_file()
    return set(ast.literal_eval(out))


def test_the_run_browser_computes_no_statistics(tmp_path: Path) -> None:
    assert not _browse(tmp_path) & {"scipy", "torch", "polars", "qdrant_edge", "sentence_transformers"}
