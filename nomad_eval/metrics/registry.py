"""One declarative spec per measure: name, kernel, unit, direction, tolerance and gate role live together.

Everything else (the retrieval scorer, compare, the gate, charts, HTML, the planning command) reads this
registry instead of repeating metric names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeGuard

Direction = Literal["higher", "lower"]
ToleranceKind = Literal["abs", "rel"]
Tier = Literal["retrieval", "generation", "app"]  # app: measured on an app run only, never per question
DEFAULT_TOLERANCE = 0.02
# Float error: 0.95 - 0.93 is 0.020000000000000018; a drop of exactly the tolerance is not a regression.
EPS = 1e-9

# A ranking kernel: documents (or chunks) in rank order, graded relevance (> 0 is relevant), cutoff k (None:
# no cutoff). Returns None when the value cannot be measured (no relevant item), never 0 for "unknown".
RankingKernel = Callable[[Sequence[str], Mapping[str, int], "int | None"], "float | None"]


@dataclass(frozen=True)
class MetricSpec:
    family: str
    definition: str
    direction: Direction = "higher"
    tolerance: float = DEFAULT_TOLERANCE
    tolerance_kind: ToleranceKind = "abs"  # absolute for rates, relative for counts and token figures
    unit: str = "rate"
    parametrized: bool = False  # takes @k
    kernel: RankingKernel | None = None  # ranking measures only; answer metrics are scored per case
    level: Literal["document", "chunk", "case"] = "case"
    binary: bool = False  # a question's value is 0 or 1: compare uses an exact paired test
    headline: bool = False  # in the default gate (a small declared set, not every @k variant)
    tier: Tier = "retrieval"
    trec: str | None = None  # the trec_eval measure it equals, for cross-checks and exports
    gated: bool = True  # False: descriptive (a count such as `returned`), never a regression
    floor: float | None = None  # a relative tolerance's smallest tolerated worsening; None: the tolerance itself

    def name(self, k: int | None = None) -> str:
        return f"{self.family}@{k}" if self.parametrized else self.family

    def allowed(self, baseline: float) -> float:
        """The tolerated worsening. Relative tolerances keep a floor so a baseline of 0 does not flag any rise."""
        if self.tolerance_kind == "abs":
            return self.tolerance
        return max(abs(baseline) * self.tolerance, self.tolerance if self.floor is None else self.floor)

    def worsening(self, baseline: float, current: float) -> float:
        """How much worse `current` is than `baseline` in this measure's direction (negative: better)."""
        return baseline - current if self.direction == "higher" else current - baseline

    def regressed(self, baseline: float, current: float) -> bool:
        return self.gated and self.worsening(baseline, current) > self.allowed(baseline) + EPS

    def tolerance_text(self) -> str:
        if self.tolerance_kind == "abs":
            return f"±{self.tolerance:g}"
        return f"±{self.tolerance:.0%} (at least {self.tolerance if self.floor is None else self.floor:g})"


REGISTRY: dict[str, MetricSpec] = {}
# The upstream view (metrics/upstream/): upstream NOMAD's own definitions under its own names, reported as
# `upstream.<name>` (`upstream.<mode>.<name>` for answers). Left out of REGISTRY, so no run scores them as ours.
UPSTREAM: dict[str, MetricSpec] = {}
UPSTREAM_MODE = "upstream"


def register(spec: MetricSpec) -> MetricSpec:
    if spec.family in REGISTRY:
        raise ValueError(f"metric {spec.family!r} registered twice")
    REGISTRY[spec.family] = spec
    return spec


# Parts hold no dot, @ or whitespace; a cut-off is a whole number from 1 without leading zeros, so that every
# name has one spelling and str(MetricName.parse(name)) == name.
_PART = r"[^\s.@]+"
_NAME = re.compile(rf"(?:(?P<mode>{_PART}(?:\.{_PART})*)\.)?(?P<family>{_PART})(?:@(?P<k>[^@]*))?")
_CUT_OFF = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class MetricName:
    """A reported metric name, `[<mode>.]<family>[@<k>]`: `recall@5`, `e2e.correctness`, `e2e.recall@5`,
    `nonEmptyRateOnRefusal`. A judge gate `judge.[<mode>.]<rubric>` parses with mode `judge` (or `judge.e2e`)."""

    mode: str | None
    family: str
    k: int | None = None

    @classmethod
    def parse(cls, name: str) -> MetricName:
        m = _NAME.fullmatch(name)
        if m is None:
            raise ValueError(f"{name!r} is not a metric name: expected [<mode>.]<family>[@<k>], e.g. recall@5, "
                             "e2e.correctness or e2e.recall@5")
        k = m["k"]
        if k is not None and not _CUT_OFF.fullmatch(k):
            raise ValueError(f"{name!r} is not a metric name: the cut-off after @ must be a whole number from 1 "
                             f"(no sign, no leading zero), not {k!r}")
        return cls(m["mode"], m["family"], None if k is None else int(k))

    @classmethod
    def try_parse(cls, name: str) -> MetricName | None:
        """The parsed name, or None for text that is not a metric name (a sweep parameter, a hand-edited key)."""
        try:
            return cls.parse(name)
        except ValueError:
            return None

    @property
    def bare(self) -> str:
        """The name without its mode: `e2e.recall@5` -> `recall@5`."""
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def __str__(self) -> str:
        return self.bare if self.mode is None else f"{self.mode}.{self.bare}"


def spec_for(name: str) -> MetricSpec | None:
    """The spec of a reported metric name such as `recall@5`, `e2e.correctness` or `nonEmptyRateOnRefusal`."""
    parsed = MetricName.try_parse(name)
    if parsed is None:
        return None
    if parsed.mode is not None and parsed.mode.split(".")[0] == UPSTREAM_MODE:  # upstream.e2e.correctness
        return UPSTREAM.get(parsed.family)
    return REGISTRY.get(parsed.family)


def headline_names(tier: Tier, k: int, modes: Sequence[str] = ()) -> list[str]:
    """The default gate: the registry's headline measures, ranking ones at cutoff `k`, per mode for generation."""
    specs = [s for s in REGISTRY.values() if s.headline and s.tier == tier]
    if tier == "generation":
        return [f"{m}.{s.name()}" for m in modes for s in specs]
    return [s.name(k) for s in specs]


def at_k_families(tier: Tier = "retrieval") -> list[str]:
    """Families reported at each cutoff, in registration order: the rows of every per-cutoff table and chart."""
    return [s.family for s in REGISTRY.values() if s.parametrized and s.tier == tier]


def is_number(v: object) -> TypeGuard[float]:  # a finite int or float, never a bool
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


# The served index's parity (tier=app, harness/served.py): a share of passages with its Wilson interval, reported as
# `app.current_context_rate` so `gate.fail_under={app.current_context_rate: 0.99}` holds a floor on it.
CURRENT_CONTEXT = register(MetricSpec(
    "current_context_rate", "share of the passages the app served whose text is in the current version of a corpus "
    "document (not an old version, not from outside the corpus)", tier="app"))
