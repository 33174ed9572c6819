"""`nomad-eval --help` answered without Hydra is Hydra's own page, for the shipped configs and a project's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nomad_eval.base.paths import REPO


def _help(*args: str, project: Path | None = None) -> str:
    env = {**os.environ, **({"NOMAD_EVAL_PROJECT": str(project)} if project else {})}
    r = subprocess.run([sys.executable, "-m", "nomad_eval", *args], cwd=project or REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_fast_help_is_hydras_page(tmp_path: Path) -> None:
    # Any override sends --help to Hydra, which composes the config and lists the groups itself.
    hydra = _help("--help", f"hydra.run.dir={tmp_path / 'run'}")
    assert "Config groups (group=option):" in hydra and "\nstore: edge, server\n" in hydra
    assert _help("--help") == hydra
    assert _help("-h") == hydra


def test_a_projects_own_options_are_listed(tmp_path: Path) -> None:
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\nlimit: 3\n")
    (tmp_path / "conf" / "extra").mkdir()
    (tmp_path / "conf" / "extra" / "one.yaml").write_text("a: 1\n")
    hydra = _help("--help", f"hydra.run.dir={tmp_path / 'run'}", project=tmp_path)
    fast = _help("--help", project=tmp_path)
    assert fast == hydra
    assert "\nextra: one\n" in fast and "mine" in next(line for line in fast.splitlines()
                                                       if line.startswith("experiment:"))
