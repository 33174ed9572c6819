"""Precision at k, document level (`precision@k`) and chunk level (`chunk_precision@k`): both divide by k."""

from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant, window
from nomad_eval.metrics.registry import MetricSpec, register


def _precision(ranked: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    top = window(ranked, k)
    denominator = k if k is not None else len(top)
    return sum(map(rel.__contains__, top)) / denominator if denominator else 0.0  # a repeated document counts again


def precision_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Relevant documents among the first k distinct documents, over k (trec_eval P_k: a short list is not
    excused; `returned` shows how much came back)."""
    return _precision(ranked_docs, rels, k)


def chunk_precision_at_k(chunk_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """`chunk_docs` is the document id of each returned chunk, in rank order (not deduplicated): each chunk is
    judged by its document. Over k, like trec_eval's P_k, so returning nothing scores 0."""
    return _precision(chunk_docs, rels, k)


SPEC = register(MetricSpec(
    "precision", "relevant documents among the first k distinct documents, over k", parametrized=True,
    kernel=precision_at_k, level="document", trec="P",
))
CHUNK = register(MetricSpec(
    "chunk_precision",
    "chunks from relevant documents among the first k chunks, over k; not deduplicated",
    parametrized=True, kernel=chunk_precision_at_k, level="chunk",
))
