"""Hydra callbacks: stamp a sweep so its jobs are known, then merge them when it ends."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from nomad_eval.base.atomic import write_atomic

# Hydra makes these callbacks for every run, a corpus check or `--help` too: the report modules (pydantic, numpy,
# polars) load only when a sweep ends.


class SweepSummary(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from nomad_eval.report.merge import SWEEP_FILE

        sweep_dir = Path(config.hydra.sweep.dir)
        # A fresh id per sweep: jobs record it, so a reused sweep dir's stale jobs are never merged.
        write_atomic(sweep_dir / SWEEP_FILE, json.dumps({"sweep_id": uuid.uuid4().hex}))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from nomad_eval.report.merge import collect, merge, sweep_id, write_summary

        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = collect([p for p in sweep_dir.iterdir() if p.is_dir()], sweep_id(sweep_dir))
        df = merge(jobs)
        from nomad_eval.base.console import console, err_console
        from nomad_eval.report.sweep_rank import (
            metric_vs_answers_sweep,
            predictor_lines,
            predictors_markdown,
            rank_sweep,
        )

        predictors = None
        try:
            predictors = metric_vs_answers_sweep(jobs, sweep_dir, config, quiet=True)
        except Exception as exc:  # like the ranking: a failure here must not cost the summary
            err_console.print(f"warning: retrieval-vs-answers correlation failed: {exc}")
        write_summary(df, sweep_dir, quiet=bool(config.get("quiet")),
                      sections=[predictors_markdown(predictors)] if predictors else [])
        if predictors and not config.get("quiet"):
            for line in predictor_lines(predictors):
                console.print(line, markup=False, highlight=False)

        try:
            rank_sweep(jobs, sweep_dir, config, quiet=bool(config.get("quiet")))
        except Exception as exc:  # the summary is written; a ranking that fails must not cost the sweep's HTML
            err_console.print(f"warning: sweep ranking failed: {exc}")
        from nomad_eval.report.html_writer import write_sweep_html
        from nomad_eval.report.matrix import assemble, write_matrix

        rows = assemble(jobs)
        if rows:
            write_matrix(rows, sweep_dir, quiet=bool(config.get("quiet")))
        write_sweep_html(sweep_dir, df.to_dicts() if df.height else [], rows, predictors)
        from nomad_eval.tiers.browse import after

        after(config, sweep_dir, sweep=True)  # refresh runs.html; never fails the sweep
