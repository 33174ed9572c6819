"""The gate's settings (gate/settings.py) from the run's config."""

from __future__ import annotations

from pathlib import Path

from nomad_eval.config.run_config import RunConfig
from nomad_eval.gate.settings import CompareSettings, GateSettings, HistorySettings, configured_floors


def history_settings(config: RunConfig) -> HistorySettings | None:
    """compare.history: the earlier runs under the run browser's roots; None when off."""
    if not config.compare.history:
        return None
    return HistorySettings(roots=tuple(Path(str(r)) for r in config.browse.roots), scan=int(config.browse.limit),
                           runs=config.compare.history_runs)


def compare_settings(config: RunConfig) -> CompareSettings:
    c = config.compare
    return CompareSettings(
        metrics=tuple(c.metrics) if c.metrics else None, headline_k=c.headline_k, view=c.view, stale=c.stale,
        exclude_unstable=c.exclude_unstable, strict=c.strict, tolerance=c.tolerance, cluster=config.stats.cluster,
        resamples=config.stats.resamples, seed=config.seed, correlation=config.plan.correlation,
        max_infra=config.gate.max_infra,
        quarantine_dir=None if config.data.kind == "beir" else config.data.goldens_dir,
        history=history_settings(config))


def gate_settings(config: RunConfig) -> GateSettings:
    """The gate's settings from the run's config (nomad_eval/gate/settings.py)."""
    c = config.compare
    return GateSettings(
        floors=configured_floors({"fail_under": config.gate.fail_under}), after_run=c.after_run,
        baseline=Path(c.baseline) if c.baseline else None, variant=c.variant or None,
        baselines_dir=Path(config.paths.baselines_dir), junit=Path(c.junit) if c.junit else None,
        compare=compare_settings(config))
