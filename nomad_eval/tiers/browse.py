"""tier=browse: rebuild runs.html over every run under the output folders (run/runs_page.py)."""

from __future__ import annotations

from nomad_eval.base.console import console
from nomad_eval.config import RunConfig
from nomad_eval.run.runs_page import rebuild, settings


def run(config: RunConfig) -> int:
    roots, out, limit = settings(config.browse)
    path, n = rebuild(roots, out, limit)
    if not config.quiet:
        console.print(f"run browser: {n} runs → {path}", markup=False, highlight=False)
    return 0
