from __future__ import annotations

from collections.abc import Sequence, Set

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "chunk_precision",
    "chunks from relevant documents among the first k chunks, over min(k, chunks returned); not deduplicated",
    parametrized=True,
))


def chunk_precision_at_k(chunk_docs: Sequence[str], relevant: Set[str], k: int) -> float | None:
    """`chunk_docs` is the document id of each returned chunk, in rank order. None when nothing came back."""
    if not relevant or not chunk_docs:
        return None
    window = chunk_docs[:k]
    return sum(1 for d in window if d in relevant) / min(k, len(chunk_docs))
