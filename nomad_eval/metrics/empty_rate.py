"""Answerable questions for which retrieval returned nothing: upstream NOMAD's `emptyRateOnAnswerable`.

The other half of the threshold trade-off beside `nonEmptyRateOnRefusal`: a rise means the score threshold
(or `pipeline.min_final_score`) is filtering out real answers. 1/0 per answerable question; a refusal golden
is not measured (None), so the mean is over answerable questions only.
"""

from __future__ import annotations

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "emptyRateOnAnswerable",
    "share of answerable goldens for which retrieval returned nothing (the threshold cut a real answer)",
    direction="lower", binary=True, gated=True,
))


def empty(returned: int) -> float:
    return 1.0 if returned == 0 else 0.0
