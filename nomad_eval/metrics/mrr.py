"""Reciprocal rank: within the first k distinct documents (`mrr@k`) and over the whole ranking (`rr`)."""

from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant, window
from nomad_eval.metrics.registry import MetricSpec, register


def mrr_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    for rank, doc in enumerate(window(ranked_docs, k), 1):
        if doc in rel:
            return 1.0 / rank
    return 0.0


def reciprocal_rank(ranked_docs: Sequence[str], rels: Relevance, k: int | None = None) -> float | None:
    """No cut-off: the whole ranking, as trec_eval's recip_rank."""
    return mrr_at_k(ranked_docs, rels, None)


SPEC = register(MetricSpec(
    "mrr", "1 / rank of the first relevant document within the first k distinct documents (0 if none)",
    parametrized=True, kernel=mrr_at_k, level="document", headline=True,
))
RR = register(MetricSpec(
    "rr", "1 / rank of the first relevant document in the whole ranking, no cut-off (0 if none)",
    kernel=reciprocal_rank, level="document", trec="recip_rank",
))
