"""The wheel the install tests share, and the environment a user's shell gives the tool."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO


def user_env() -> dict[str, str]:
    """No checkout on the path, no project chosen, offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NOMAD_EVAL_PROJECT")}
    return env | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout, built once for the tests that install it (read only: each installs or copies it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy, so the build's own leftovers (build/, *.egg-info) stay out of the checkout.
    src = tmp / "src"
    shutil.copytree(REPO / "nomad_eval", src / "nomad_eval", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp / "wheels")], cwd=tmp, env=user_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (built,) = (tmp / "wheels").glob("nomad_eval-*.whl")
    return built
