"""What the gate is told, as plain values the caller builds from the run's config (the gate never reads a config):
where the baselines are and which one to use, the floors, and how two runs are compared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HistorySettings:
    """Where the project's earlier runs are, for the draws of a question asked once on both sides (gate/history.py)."""

    roots: tuple[Path, ...]          # browse.roots: the folders holding the project's runs
    scan: int                        # browse.limit: the newest reports looked at
    runs: int                        # compare.history_runs: the most earlier runs whose draws count


@dataclass(frozen=True)
class CompareSettings:
    """How a run is compared with its baseline (compare.*, stats.*, plan.correlation, gate.max_infra, seed,
    browse.roots for the question history)."""

    metrics: tuple[str, ...] | None  # compare.metrics; None: the registry's headline measures the baseline holds
    headline_k: int
    view: str                        # auto | upstream
    stale: str                       # fail | warn (checked when a compare is made)
    exclude_unstable: bool
    strict: bool
    tolerance: float | None          # one for every gated metric; None: each its own
    cluster: bool
    resamples: int
    seed: int
    correlation: float
    max_infra: float
    quarantine_dir: Path | None      # the goldens folder holding quarantine.yaml; None: no quarantine (BEIR)
    history: HistorySettings | None  # compare.history; None: no question history


@dataclass(frozen=True)
class GateSettings:
    floors: Mapping[str, float]      # gate.fail_under: metric -> floor
    after_run: bool                  # compare with a baseline (compare.after_run; tier=compare and promote: always)
    baseline: Path | None            # named by compare.baseline; None: the one of this fingerprint, else the nearest
    variant: str | None              # compare.variant; None: the run's default (a generation run's mode)
    baselines_dir: Path
    junit: Path | None               # compare.junit: relative to the run folder unless absolute
    compare: CompareSettings


def configured_floors(gate: Mapping[str, object] | None) -> dict[str, float]:
    """`gate.fail_under` of a config (the run's, or a saved report's) as metric -> floor."""
    raw = (gate or {}).get("fail_under") or {}
    return {str(k): float(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
