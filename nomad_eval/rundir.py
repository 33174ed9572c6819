"""Where this run writes: Hydra's output dir, or `paths.run_dir` when set (tests, scripts)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig


def run_dir(cfg: DictConfig) -> Path:
    explicit = cfg.paths.get("run_dir")
    if explicit:
        path = Path(explicit)
    else:
        from hydra.core.hydra_config import HydraConfig

        path = Path(HydraConfig.get().runtime.output_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path
