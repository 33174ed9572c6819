from __future__ import annotations

from collections.abc import Sequence, Set

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "mrr", "1 / rank of the first relevant document within the first k distinct documents (0 if none)",
    parametrized=True,
))


def mrr_at_k(ranked_docs: Sequence[str], relevant: Set[str], k: int) -> float | None:
    if not relevant:
        return None
    for rank, doc in enumerate(ranked_docs[:k], 1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0
