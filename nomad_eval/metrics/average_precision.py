from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant, window
from nomad_eval.metrics.registry import MetricSpec, register


def average_precision_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Precision at each relevant document's rank within the first k, summed over every relevant document."""
    rel = relevant(rels)
    if not rel:
        return None
    found, total = 0, 0.0
    for rank, doc in enumerate(window(ranked_docs, k), 1):
        if doc in rel:
            found += 1
            total += found / rank
    return total / len(rel)


SPEC = register(MetricSpec(
    "map", "average precision of the first k distinct documents: precision at each relevant one's rank, summed "
    "over every relevant document", parametrized=True, kernel=average_precision_at_k, level="document",
    trec="map_cut",
))
