"""What judging reads from a run's config, typed: built once by the tiers (tiers/settings.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JudgingRules:
    """When a calibration lets its judge gate (judging.* in the config)."""

    min_agreement: float
    gate_on: str                            # "point", or "lower_bound": the interval's worse end
    max_order_flip_rate: float | None
    max_verbosity_shift: float | None
    min_abstention_faithful: float | None

    def limit(self, setting: str) -> float | None:
        value = getattr(self, setting)
        return None if value is None else float(value)


@dataclass(frozen=True)
class JudgeSettings:
    model: Mapping[str, Any]                # the judge's backend: `_target_` and arguments
    model_name: str
    rubrics: tuple[str, ...]
    rubrics_dir: Path
    calibration_dir: Path
    rules: JudgingRules
    seed: int
    retries: int
    max_tokens: int
    quiet: bool
    generator: str | None                   # the generating model's name: a judge of its family is warned about
    fail_under: Mapping[str, float]          # the gate's floors: a judge metric among them needs a calibration
