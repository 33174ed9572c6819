"""The wheel the install tests share, and the environment a user's shell gives the tool."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO


def machine_venv(venv: Path, *flags: str) -> None:
    """A fresh virtual environment that sees the packages the tests run with, as a user's venv made with
    --system-site-packages sees the machine's. That flag alone reaches only the base interpreter's packages, not
    those of the virtual environment the tests run in (`./dev` runs them in .venv), so a .pth file adds its
    site-packages. Its own .pth files (the checkout's editable install) are not read that way."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", *flags, str(venv)], check=True,
                   timeout=120, capture_output=True)
    (own,) = (venv / "lib").glob("python*/site-packages")
    (own / "tests-environment.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))


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
