from __future__ import annotations

import math
from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, grades, window
from nomad_eval.metrics.registry import MetricSpec, register


def _dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(r + 1) for r, g in enumerate(gains, 1) if g > 0)


def ndcg_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Graded gain (the relevance grade) over the ideal DCG of every judged grade sorted descending, both cut at k."""
    judged = grades(rels)
    ideal_gains = sorted((g for g in judged.values() if g > 0), reverse=True)
    if not ideal_gains:
        return None
    dcg = _dcg([judged.get(d, 0) for d in window(ranked_docs, k)])
    return dcg / _dcg(window(ideal_gains, k))


SPEC = register(MetricSpec(
    "ndcg", "graded DCG of the first k distinct documents (gain = relevance grade) over the ideal DCG of the "
    "judged grades sorted descending, cut at k",
    parametrized=True, kernel=ndcg_at_k, level="document", headline=True, trec="ndcg_cut",
))
