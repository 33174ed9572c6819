"""One declarative spec per metric: name, direction and tolerance live beside the definition.

Compare reads direction and tolerance from here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]
ToleranceKind = Literal["abs", "rel"]
DEFAULT_TOLERANCE = 0.02


@dataclass(frozen=True)
class MetricSpec:
    family: str
    definition: str
    direction: Direction = "higher"
    tolerance: float = DEFAULT_TOLERANCE
    tolerance_kind: ToleranceKind = "abs"  # absolute for rates, relative for counts and token figures
    unit: str = "rate"
    parametrized: bool = False  # takes @k

    def name(self, k: int | None = None) -> str:
        return f"{self.family}@{k}" if self.parametrized else self.family

    def regressed(self, baseline: float, current: float) -> bool:
        allowed = self.tolerance if self.tolerance_kind == "abs" else abs(baseline) * self.tolerance
        delta = current - baseline
        return delta < -allowed if self.direction == "higher" else delta > allowed


REGISTRY: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    if spec.family in REGISTRY:
        raise ValueError(f"metric {spec.family!r} registered twice")
    REGISTRY[spec.family] = spec
    return spec


def spec_for(name: str) -> MetricSpec | None:
    """The spec of a reported metric name such as `recall@5` or `nonEmptyRateOnRefusal`."""
    family = name.split("@", 1)[0].rsplit(".", 1)[-1]  # "e2e.correctness" -> "correctness"
    return REGISTRY.get(family)
