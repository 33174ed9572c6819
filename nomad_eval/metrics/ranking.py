"""The retrieval measures: ranking kernels over the first k distinct documents (or chunks), each with its spec,
and the counts of what came back. Registered in the order every per-cutoff table and chart shows them.

Relevance is graded (`{doc: grade}`); a grade > 0 is relevant (trec_eval's default relevance_level 1). A plain set
of relevant ids is accepted too and read as grade 1 for each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from typing import TypeVar

from nomad_eval.metrics.registry import MetricSpec, register

Relevance = Mapping[str, int] | Set[str]
T = TypeVar("T")


def grades(rels: Relevance) -> Mapping[str, int]:
    return rels if isinstance(rels, Mapping) else dict.fromkeys(rels, 1)


def relevant(rels: Relevance) -> Set[str]:
    """The ids that count as relevant: grade > 0. A set is used as it is (kernels run per query and cutoff)."""
    if type(rels) is set or type(rels) is frozenset:  # the common case, without the ABC check (~0.3 us a call)
        return rels
    if isinstance(rels, Mapping):
        return {d for d, g in rels.items() if g > 0}
    return rels


def window(ranked: Sequence[T], k: int | None) -> Sequence[T]:
    """The first k of the ranking (all of it when k is None); a cut-off below 1 is refused, never read as empty."""
    if k is None:
        return ranked
    if type(k) is not int or k < 1:  # bool is a subclass of int; `type` refuses it and is the cheaper test
        raise ValueError(f"cut-off k={k!r} must be an integer of at least 1")
    return ranked[:k]


def average_precision_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    """Precision at each relevant document's rank within the first k, summed over every relevant document."""
    rel = relevant(rels)
    if not rel:
        return None
    found, total = 0, 0.0
    for rank, doc in enumerate(window(ranked_docs, k), 1):
        if doc in rel:
            found += 1
            total += found / rank
    return total / len(rel)


def hit_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    return 0.0 if rel.isdisjoint(window(ranked_docs, k)) else 1.0


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


def recall_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    concrete = rel if isinstance(rel, set | frozenset) else set(rel)
    return len(concrete.intersection(window(ranked_docs, k))) / len(rel)  # distinct documents, without a set of them


def r_precision(ranked_docs: Sequence[str], rels: Relevance, k: int | None = None) -> float | None:
    """Precision at R, R the number of relevant documents; takes no cut-off of its own."""
    rel = relevant(rels)
    if not rel:
        return None
    return sum(1 for d in ranked_docs[: len(rel)] if d in rel) / len(rel)


register(MetricSpec(
    "map", "average precision of the first k distinct documents: precision at each relevant one's rank, summed "
    "over every relevant document", parametrized=True, kernel=average_precision_at_k, level="document",
    trec="map_cut",
))
# Upstream NOMAD's `emptyRateOnAnswerable`, 1/0 per answerable question (None on a refusal golden): the other half
# of the threshold trade-off beside `nonEmptyRateOnRefusal`; a rise means the score threshold (or
# `pipeline.min_final_score`) is filtering out real answers.
EMPTY = register(MetricSpec(
    "emptyRateOnAnswerable",
    "share of answerable goldens for which retrieval returned nothing (the threshold cut a real answer)",
    direction="lower", binary=True, gated=True,
))
register(MetricSpec(
    "hit", "1 when any relevant document is among the first k distinct documents, else 0", parametrized=True,
    kernel=hit_at_k, level="document", binary=True, trec="success",
))
register(MetricSpec(
    "mrr", "1 / rank of the first relevant document within the first k distinct documents (0 if none)",
    parametrized=True, kernel=mrr_at_k, level="document", headline=True,
))
register(MetricSpec(
    "rr", "1 / rank of the first relevant document in the whole ranking, no cut-off (0 if none)",
    kernel=reciprocal_rank, level="document", trec="recip_rank",
))
register(MetricSpec(
    "ndcg", "graded DCG of the first k distinct documents (gain = relevance grade) over the ideal DCG of the "
    "judged grades sorted descending, cut at k",
    parametrized=True, kernel=ndcg_at_k, level="document", headline=True, trec="ndcg_cut",
))
register(MetricSpec(
    "precision", "relevant documents among the first k distinct documents, over k", parametrized=True,
    kernel=precision_at_k, level="document", trec="P",
))
register(MetricSpec(
    "chunk_precision",
    "chunks from relevant documents among the first k chunks, over k; not deduplicated",
    parametrized=True, kernel=chunk_precision_at_k, level="chunk",
))
register(MetricSpec(
    "recall", "share of the relevant documents (grade > 0) among the first k distinct documents",
    parametrized=True, kernel=recall_at_k, level="document", headline=True, trec="recall",
))
NON_EMPTY = register(MetricSpec(
    "nonEmptyRateOnRefusal",
    "share of refusal goldens for which retrieval still returned chunks (the model then sees tempting context)",
    direction="lower", binary=True, headline=True,
))
# Descriptive, so precision's denominator (k, whatever came back) can be read beside it; never a gate.
RETURNED = register(MetricSpec(
    "returned", "chunks the pipeline returned for an answerable question (descriptive, not gated)",
    unit="chunks", tolerance_kind="rel", gated=False,
))
register(MetricSpec(
    "rprec", "precision at R, R the number of relevant documents (no cut-off of its own)", kernel=r_precision,
    level="document", trec="Rprec",
))
