"""Pure metric functions and the registry that says how to read them."""

from nomad_eval.metrics import (
    average_precision,
    empty_rate,
    hit,
    mrr,
    ndcg,
    precision,
    recall,
    refusal_retrieval,
    returned,
    rprec,
    upstream,
)
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

__all__ = ["REGISTRY", "MetricSpec", "spec_for", "attack", "average_precision", "budget_metrics", "correctness",
           "empty_rate", "groundedness", "hit", "instability", "leakage", "markdown_rate", "mrr", "ndcg", "pass_rate",
           "precision", "recall", "refusal", "refusal_retrieval", "returned", "rprec", "think_leak", "upstream"]
