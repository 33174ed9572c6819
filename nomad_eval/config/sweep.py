"""A sweep's ranking settings from the run's config: apart from config/settings.py, so that one run's settings
do not import the sweep modules (report/sweep_rank.py and what it ranks with)."""

from __future__ import annotations

from nomad_eval.config.run_config import RunConfig
from nomad_eval.report.sweep_rank import SweepSettings


def sweep_settings(config: RunConfig) -> SweepSettings:
    c = config.compare
    return SweepSettings(reference=c.reference, correction=c.correction, headline_k=c.headline_k, seed=config.seed,
                         resamples=config.stats.resamples)
