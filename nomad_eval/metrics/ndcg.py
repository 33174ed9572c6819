from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from nomad_eval.metrics.ranking import Relevance, window
from nomad_eval.metrics.registry import MetricSpec, register


def _table(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """1 / log2(rank + 1) for ranks 1..n, and their running sums (the ideal DCG of 0..n binary hits)."""
    discount = tuple(1.0 / math.log2(i + 2) for i in range(n))
    ideal = [0.0]
    for d in discount:
        ideal.append(ideal[-1] + d)
    return discount, tuple(ideal)


# Made once, at import: nDCG runs per query and cutoff, and the logarithms were most of its cost. Longer lists
# than this get their own table.
_SHORT = 1024
_DISCOUNT, _IDEAL = _table(_SHORT)


def _tables(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    return (_DISCOUNT, _IDEAL) if n <= _SHORT else _table(n)


def _dcg(gains: Sequence[int]) -> float:
    discount = _tables(len(gains))[0]
    return sum(g * discount[i] for i, g in enumerate(gains) if g > 0)


def ndcg_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Graded gain (the relevance grade) over the ideal DCG of every judged grade sorted descending, both cut at k."""
    top = window(ranked_docs, k)
    if not isinstance(rels, Mapping):  # a plain set: every grade is 1
        if not rels:
            return None
        discount, ideal = _tables(max(len(top), len(rels)))
        dcg = sum(discount[i] for i, d in enumerate(top) if d in rels)
        return dcg / ideal[len(rels) if k is None else min(len(rels), k)]
    ideal_gains = sorted((g for g in rels.values() if g > 0), reverse=True)
    if not ideal_gains:
        return None
    return _dcg([rels.get(d, 0) for d in top]) / _dcg(window(ideal_gains, k))


SPEC = register(MetricSpec(
    "ndcg", "graded DCG of the first k distinct documents (gain = relevance grade) over the ideal DCG of the "
    "judged grades sorted descending, cut at k",
    parametrized=True, kernel=ndcg_at_k, level="document", headline=True, trec="ndcg_cut",
))
