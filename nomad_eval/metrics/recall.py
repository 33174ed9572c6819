from __future__ import annotations

from collections.abc import Sequence, Set

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "recall", "share of the relevant documents found in the first k distinct documents", parametrized=True,
))


def recall_at_k(ranked_docs: Sequence[str], relevant: Set[str], k: int) -> float | None:
    if not relevant:
        return None
    return len(relevant & set(ranked_docs[:k])) / len(relevant)
