"""Pure metric functions and the registry that says how to read them."""

from nomad_eval.metrics import ranking, upstream
from nomad_eval.metrics.answer import (
    attack,
    budget_metrics,
    correctness,
    groundedness,
    instability,
    leakage,
    markdown_rate,
    pass_rate,
    refusal,
    think_leak,
)
from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for

__all__ = ["REGISTRY", "MetricSpec", "spec_for", "attack", "budget_metrics", "correctness", "groundedness",
           "instability", "leakage", "markdown_rate", "pass_rate", "ranking", "refusal", "think_leak", "upstream"]
