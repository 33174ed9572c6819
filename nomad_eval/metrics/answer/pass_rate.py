from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "pass_rate", "share of questions that pass (correct answer, or a correct refusal), each averaged over its repeats",
    tier="generation", headline=True,
))


def question_outcome(passes: Sequence[bool | None]) -> tuple[float | None, bool]:
    """(pass rate over repeats, unstable): unstable when the outcome flips between repeats."""
    measured = [p for p in passes if p is not None]
    if not measured:
        return None, False
    rate = sum(measured) / len(measured)
    return rate, 0.0 < rate < 1.0
