"""tier=browse: rebuild runs.html over every run under the output folders (run/runs_page.py)."""

from __future__ import annotations

from omegaconf import DictConfig

from nomad_eval.base.console import console
from nomad_eval.run.runs_page import rebuild, settings


def run(cfg: DictConfig) -> int:
    roots, out, limit = settings(cfg)
    path, n = rebuild(roots, out, limit)
    if not cfg.quiet:
        console.print(f"run browser: {n} runs → {path}", markup=False, highlight=False)
    return 0
