"""What a compare decides, as records: each metric's verdict and the whole verdict with its questions. The gate's
rule that fills them is gate/compare.py; gate/record.py turns them into the report's gate section."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from nomad_eval.core.fresh import Fresh
from nomad_eval.core.stats import Interval
from nomad_eval.gate.pairing import QuestionSets

Outcome = Literal["regression", "within tolerance", "too small to tell", "not measured", "not gated"]
FAILING = ("regression", "not measured")


@dataclass(frozen=True)
class MetricVerdict:
    name: str
    gated: bool
    outcome: Outcome
    baseline: float | None   # mean over the common questions
    current: float | None
    n: int                   # questions in the pairing
    interval: Interval | None = None   # question sampling: 95% interval of the delta
    p_value: float | None = None
    p_adjusted: float | None = None    # Holm across the gated metrics
    mde: float | None = None           # the suite's detectable change in general (tier=plan's figure)
    tolerance: str = "—"
    reason: str = ""
    noise: float | None = None         # run-to-run standard error of the delta (0: deterministic; None: unmeasured)
    worse: tuple[str, ...] = ()        # questions worse on this metric than in the baseline
    noise_source: str = ""             # where the run-to-run noise came from
    noise_df: float = math.inf         # degrees of freedom of that noise estimate
    noise_step: float = 0.0            # the smallest move of the delta (0/1 draws), for continuity correction
    noise_p: float | None = None       # Holm-adjusted one-sided p of the drop past the tolerance, noise alone
    fresh: Fresh | None = None         # a pass rate's fresh failures on steady questions (core/fresh.py)

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


@dataclass
class Verdict:
    refused: list[str] = field(default_factory=list)   # not comparable: exit 2
    metrics: list[MetricVerdict] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)  # what changed, "key baseline → run"
    questions: QuestionSets = field(default_factory=QuestionSets)
    newly_failing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    clustered: bool = False
    strict: bool = False  # a worse metric the suite is too small to judge in general fails too
    infra_over: str = ""  # the run's calls failed in the infrastructure past gate.max_infra: not measured
    # Goldens whose evidence the corpus no longer holds where they say (data/anchors.py), one message each: left
    # out of the gated questions, and their own verdict unless `stale_warn` (compare.stale=warn).
    stale: list[str] = field(default_factory=list)
    stale_warn: bool = False
    evidence: dict[str, list[str]] = field(default_factory=dict)  # evidence status -> golden ids, all but intact

    @property
    def common(self) -> int:
        return len(self.questions.common)

    @property
    def regressions(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.gated and m.outcome == "regression"]

    @property
    def unmeasured(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.gated and m.outcome == "not measured"]

    @property
    def too_small(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.gated and m.outcome == "too small to tell"]

    @property
    def outcome(self) -> str:
        if self.refused:
            return "not comparable"
        if self.regressions:
            return "regression"
        if self.unmeasured or self.questions.missing or self.infra_over:
            return "not measured"
        if self.stale and not self.stale_warn:
            return "golden out of date"
        return "too small to tell" if self.too_small else "pass"

    @property
    def exit_code(self) -> int:
        if self.refused:
            return 2
        return 1 if self.outcome in ("regression", "not measured", "golden out of date", "too small to tell") else 0
