"""Hydra callbacks: keep credentials out of what Hydra writes; stamp a sweep so its jobs are known, then merge
them when it ends."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.atomic import write_atomic
from nomad_eval.base.secrets import (
    ENV_NAMES,
    credential_advice,
    known_secrets,
    literal_secrets,
    redact_override,
    redact_tree,
)

if TYPE_CHECKING:
    from nomad_eval.report.merge import SweepRow

# Hydra makes these callbacks for every run, a corpus check or `--help` too: the report modules (pydantic, numpy,
# polars) load only when a sweep ends.


class SweepSummary(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from nomad_eval.report.merge import SWEEP_FILE

        sweep_dir = Path(config.hydra.sweep.dir)
        # A fresh id per sweep: jobs record it, so a reused sweep dir's stale jobs are never merged.
        write_atomic(sweep_dir / SWEEP_FILE, json.dumps({"sweep_id": uuid.uuid4().hex}))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from nomad_eval.base.console import console
        from nomad_eval.report.merge import collect, sweep_id
        from nomad_eval.report.sweep_rank import SweepSettings
        from nomad_eval.report.sweep_summary import summarize_sweep

        sweep_dir = Path(config.hydra.sweep.dir)
        jobs = collect([p for p in sweep_dir.iterdir() if p.is_dir()], sweep_id(sweep_dir))
        c = config.compare
        ranking = SweepSettings(reference=None if c.reference is None else str(c.reference),
                                correction=str(c.correction), headline_k=int(c.headline_k), seed=int(config.seed),
                                resamples=int(config.stats.resamples))
        df, predictors, best = summarize_sweep(jobs, sweep_dir, ranking, quiet=bool(config.get("quiet")))
        from nomad_eval.report.html_sweep import write_sweep_html
        from nomad_eval.report.matrix import assemble, write_matrix

        rows = assemble(jobs)
        if rows:
            write_matrix(rows, sweep_dir, quiet=bool(config.get("quiet")))
        write_sweep_html(sweep_dir, df.to_dicts() if df.height else [], rows, predictors, best)
        from nomad_eval.config.sections import BrowseKeys
        from nomad_eval.run.runs_page import after

        browse = BrowseKeys.model_validate(OmegaConf.to_container(config.browse, resolve=True))
        after(browse, sweep_dir, sweep=True)  # refresh runs.html; never fails the sweep
        console.print(f"sweep report: {sweep_dir / 'report.html'}", markup=False, highlight=False)
        _exit_with_worst(df.to_dicts() if df.height else [])


def _exit_with_worst(rows: list[SweepRow]) -> None:
    """A sweep gates like a run: it exits with its worst job's code (1 when any job got worse, else 2 when any
    could not be judged). Hydra's sweep returns no exit code of its own; this callback runs last, after the other
    callbacks' on_multirun_end (Hydra calls them in reverse order), and a SystemExit passes through Hydra."""
    import sys

    from nomad_eval.base.console import err_console
    from nomad_eval.cli.suites import overall_code

    code = overall_code([int(r.get("exit_code") or 0) for r in rows])
    if code:
        worst = [f"job {str(r['job']).split('_', 1)[0]} {r['status']}" for r in rows if r.get("exit_code") == code]
        err_console.print(f"sweep: exit {code}: {', '.join(worst)}", markup=False, highlight=False)
        sys.exit(code)


class RedactSecrets(Callback):
    """Hydra writes `.hydra/config.yaml`, `hydra.yaml`, `overrides.yaml` (and a sweep's `multirun.yaml`) before a
    job's code runs: each job rewrites them redacted (base/secrets.py), so no credential typed on the command
    line, in a config file or in a URL stays in them. (Log lines are redacted by the formatter the shipped
    config.yaml gives Hydra's handlers.) A credential typed out gets a warning to pass it through the
    environment instead."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _warn_literal(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _warn_literal(config)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        import logging

        known = _known(config)
        # One INFO line per HTTP request: noise unless asked for (verbose=true). Set for each job, as a sweep may
        # mix both.
        logging.getLogger("httpx").setLevel(logging.INFO if config.get("verbose") else logging.WARNING)
        hc = config.hydra
        if hc.output_subdir is not None:
            for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
                _rewrite(Path(hc.runtime.output_dir) / str(hc.output_subdir) / name, known)
        if str(hc.mode) == "RunMode.MULTIRUN":
            _rewrite(Path(hc.sweep.dir) / "multirun.yaml", known)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _rewrite(Path(config.hydra.sweep.dir) / "multirun.yaml", _known(config))


def _known(config: DictConfig) -> set[str]:
    from nomad_eval.cli.config_check import config_trees

    unresolved, resolved = config_trees(config)
    # An unset environment variable: the run reports it; the unresolved tree is what there is.
    resolved = unresolved if isinstance(resolved, Exception) else resolved
    typed = OmegaConf.to_container(config.hydra.overrides.task, resolve=False) if "hydra" in config else []
    return known_secrets(unresolved, resolved, [str(o) for o in typed or []])


def _rewrite(path: Path, known: set[str]) -> None:
    if not path.is_file():
        return
    import yaml

    # Most files hold nothing to redact: libyaml reads one quickly with every scalar as text, which redacts at
    # least what the typed values would (a number or null under a credential's key becomes text that is), so a
    # file unchanged that way is left as Hydra wrote it without building OmegaConf nodes on every start-up.
    plain = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    if redact_tree(plain, known) == plain:
        return
    tree = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    clean = redact_tree(tree, known)
    if clean != tree:
        write_atomic(path, OmegaConf.to_yaml(OmegaConf.create(clean)))


def _warn_literal(config: DictConfig) -> None:
    from nomad_eval.base.console import err_console

    typed = [str(o) for o in OmegaConf.to_container(config.hydra.overrides.task, resolve=False) or []]
    on_line = {k.lstrip("+~"): v for k, _, v in (o.partition("=") for o in typed if redact_override(o) != o)
               if ENV_NAMES not in k.split(".")}  # a variable's name there is what the docs ask for
    whole = OmegaConf.to_container(config, resolve=False)
    task = {k: v for k, v in whole.items() if k != "hydra"} if isinstance(whole, dict) else {}
    in_files = [k for k in literal_secrets(task) if k not in on_line]
    for key, where in [*((k, "on the command line") for k in sorted(on_line)),
                       *((k, "in a config file") for k in in_files)]:
        value = on_line.get(key, OmegaConf.select(config, key, default="", throw_on_resolution_failure=False))
        err_console.print(f"warning: {key} holds a credential typed out {where}; it is kept out of every file "
                          f"written, but {credential_advice(key, value)}", markup=False, highlight=False)
