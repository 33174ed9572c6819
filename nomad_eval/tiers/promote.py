"""tier=promote: file a run as the baseline for its fingerprint."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.report.baseline import promote


def run(cfg: DictConfig) -> int:
    if not cfg.promote.get("run"):
        raise NomadError("tier=promote needs promote.run=<run dir or report.json>", 2)
    variant = cfg.promote.get("variant")  # Hydra reads `promote.variant=2` as a number; a name is text
    target = promote(Path(cfg.promote.run), Path(cfg.paths.baselines_dir), None if variant is None else str(variant))
    console.print(f"promoted {cfg.promote.run} to {target}; commit it to make it the CI baseline")
    return 0
