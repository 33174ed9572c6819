from __future__ import annotations

import math
from collections.abc import Sequence, Set

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "ndcg", "binary-gain DCG of the first k distinct documents over the ideal DCG of min(#relevant, k) hits",
    parametrized=True,
))


def ndcg_at_k(ranked_docs: Sequence[str], relevant: Set[str], k: int) -> float | None:
    if not relevant:
        return None
    dcg = sum(1.0 / math.log2(r + 1) for r, d in enumerate(ranked_docs[:k], 1) if d in relevant)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(relevant), k) + 1))
    return dcg / ideal
