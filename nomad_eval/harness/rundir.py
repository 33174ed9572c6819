"""Where this run writes, and what Hydra knows about it (overrides, the sweep it belongs to)."""

from __future__ import annotations

import json
from pathlib import Path


def _hydra() -> object | None:
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get() if HydraConfig.initialized() else None


def run_dir(explicit: str | None) -> Path:
    """`paths.run_dir` when set, else the folder Hydra made for this job; created."""
    hc = _hydra()
    if explicit:
        path = Path(explicit)
    elif hc is not None:
        path = Path(hc.runtime.output_dir)  # type: ignore[attr-defined]
    else:
        raise ValueError("no Hydra context: set paths.run_dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def overrides() -> list[str]:
    """The command-line overrides as typed: unresolved, since reading them through OmegaConf would resolve
    `model.api_key=${oc.env:KEY}` into the key itself; a credential typed literally is redacted."""
    from omegaconf import OmegaConf

    from nomad_eval.base.secrets import redact_override

    hc = _hydra()
    if hc is None:
        return []
    typed = OmegaConf.to_container(hc.overrides.task, resolve=False)  # type: ignore[attr-defined]
    return [redact_override(str(o)) for o in typed or []]


def multirun() -> bool:
    """Whether this job is one of a sweep's (`-m`)."""
    hc = _hydra()
    return hc is not None and str(hc.mode) == "RunMode.MULTIRUN"  # type: ignore[attr-defined]


def sweep_id() -> str | None:
    hc = _hydra()
    if hc is None or not multirun():
        return None
    f = Path(hc.sweep.dir) / "sweep.json"  # type: ignore[attr-defined]
    return json.loads(f.read_text())["sweep_id"] if f.exists() else None
