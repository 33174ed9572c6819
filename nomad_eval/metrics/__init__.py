"""Pure metric functions and the registry that says how to read them."""

from nomad_eval.metrics import hit, mrr, ndcg, precision, recall, refusal_retrieval
from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for

__all__ = ["REGISTRY", "MetricSpec", "spec_for", "hit", "mrr", "ndcg", "precision", "recall", "refusal_retrieval"]
