from __future__ import annotations

from collections.abc import Sequence, Set

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "hit", "1 when any relevant document is among the first k distinct documents, else 0", parametrized=True,
))


def hit_at_k(ranked_docs: Sequence[str], relevant: Set[str], k: int) -> float | None:
    if not relevant:
        return None
    return 1.0 if any(d in relevant for d in ranked_docs[:k]) else 0.0
