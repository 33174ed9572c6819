from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant, window
from nomad_eval.metrics.registry import MetricSpec, register


def hit_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    return 0.0 if rel.isdisjoint(window(ranked_docs, k)) else 1.0


SPEC = register(MetricSpec(
    "hit", "1 when any relevant document is among the first k distinct documents, else 0", parametrized=True,
    kernel=hit_at_k, level="document", binary=True, trec="success",
))
