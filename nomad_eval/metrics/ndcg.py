from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from nomad_eval.metrics.ranking import Relevance, window
from nomad_eval.metrics.registry import MetricSpec, register

# 1 / log2(rank + 1) for ranks 1..n, and their running sums (the ideal DCG of n binary hits), grown on demand:
# nDCG runs per query and cutoff, and the logarithms were most of its cost.
_DISCOUNT: list[float] = []
_IDEAL: list[float] = [0.0]


def _grow(n: int) -> None:
    while len(_DISCOUNT) < n:
        _DISCOUNT.append(1.0 / math.log2(len(_DISCOUNT) + 2))
        _IDEAL.append(_IDEAL[-1] + _DISCOUNT[-1])


def _dcg(gains: Sequence[int]) -> float:
    _grow(len(gains))
    return sum(g * _DISCOUNT[i] for i, g in enumerate(gains) if g > 0)


def ndcg_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Graded gain (the relevance grade) over the ideal DCG of every judged grade sorted descending, both cut at k."""
    top = window(ranked_docs, k)
    if not isinstance(rels, Mapping):  # a plain set: every grade is 1
        if not rels:
            return None
        _grow(max(len(top), len(rels)))
        dcg = sum(_DISCOUNT[i] for i, d in enumerate(top) if d in rels)
        return dcg / _IDEAL[len(rels) if k is None else min(len(rels), k)]
    ideal_gains = sorted((g for g in rels.values() if g > 0), reverse=True)
    if not ideal_gains:
        return None
    return _dcg([rels.get(d, 0) for d in top]) / _dcg(window(ideal_gains, k))


SPEC = register(MetricSpec(
    "ndcg", "graded DCG of the first k distinct documents (gain = relevance grade) over the ideal DCG of the "
    "judged grades sorted descending, cut at k",
    parametrized=True, kernel=ndcg_at_k, level="document", headline=True, trec="ndcg_cut",
))
