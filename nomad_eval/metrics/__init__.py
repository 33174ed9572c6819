"""Pure metric functions and the registry that says how to read them."""

from nomad_eval.metrics import ranking, upstream
from nomad_eval.metrics.answer import attack, measures
from nomad_eval.metrics.registry import REGISTRY, MetricSpec, spec_for

__all__ = ("REGISTRY", "MetricSpec", "spec_for", "attack", "measures", "ranking", "upstream")
