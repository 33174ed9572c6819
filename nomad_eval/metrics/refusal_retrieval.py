from __future__ import annotations

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "nonEmptyRateOnRefusal",
    "share of refusal goldens for which retrieval still returned chunks (the model then sees tempting context)",
    direction="lower", binary=True, headline=True,
))


def non_empty(returned: int) -> float:
    return 1.0 if returned > 0 else 0.0
