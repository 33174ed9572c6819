"""Upstream NOMAD's retrieval metrics, as its harness defines them (the upstream view).

Apart from this project's TREC measures, which keep their own definitions: here the @k window is the first
k *chunks* as returned (a document's second chunk takes a rank of its own), precision divides by the chunks
actually in that window (0 when nothing came back), the reciprocal rank is that of the first relevant chunk,
and only nDCG ranks distinct documents. A chunk with no document (None) holds a rank but is never relevant.
Every kernel returns None for a question with no relevant document (a refusal question), as upstream does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# Upstream's reported cut-offs, measured whatever its topK: @10 at topK 5 is the window of at most 5 chunks.
K_VALUES = (1, 3, 5, 10)
PREFIX = "upstream."

Ranked = Sequence[str | None]  # each returned chunk's document id, in rank order


def document_ranking(chunks: Ranked) -> list[str]:
    """Distinct documents in the order their first chunk appears; chunks without a document are dropped."""
    return list(dict.fromkeys(d for d in chunks if d))


def recall_at_k(chunks: Ranked, relevant: Sequence[str], k: int) -> float | None:
    """Relevant documents found among the first k chunks, over the relevant documents."""
    rel = set(relevant)
    if not rel:
        return None
    return len({d for d in chunks[:k] if d in rel}) / len(rel)


def hit_rate_at_k(chunks: Ranked, relevant: Sequence[str], k: int) -> float | None:
    """1 when any of the first k chunks comes from a relevant document, else 0."""
    rel = set(relevant)
    if not rel:
        return None
    return 1.0 if any(d in rel for d in chunks[:k]) else 0.0


def precision_at_k(chunks: Ranked, relevant: Sequence[str], k: int) -> float | None:
    """Chunks from relevant documents among the first k chunks, over min(k, chunks returned); 0 when nothing
    came back. Not deduplicated: five chunks of one document count five times."""
    rel = set(relevant)
    if not rel:
        return None
    window = chunks[:k]
    if not window:
        return 0.0
    return sum(1 for d in window if d in rel) / len(window)


def reciprocal_rank(chunks: Ranked, relevant: Sequence[str]) -> float | None:
    """1 / the rank of the first chunk from a relevant document; 0 when there is none. No cut-off."""
    rel = set(relevant)
    if not rel:
        return None
    return next((1 / i for i, d in enumerate(chunks, 1) if d in rel), 0.0)


def ndcg_at_k(chunks: Ranked, relevant: Sequence[str], k: int) -> float | None:
    """Binary-gain nDCG over the first k distinct documents; the ideal ranks min(|relevant|, k) relevant ones."""
    rel = set(relevant)
    if not rel:
        return None
    dcg = 0.0
    for i, d in enumerate(document_ranking(chunks)[:k]):
        if d in rel:
            dcg += 1 / math.log2(i + 2)
    idcg = 0.0
    for i in range(min(len(rel), k)):
        idcg += 1 / math.log2(i + 2)
    return 0.0 if idcg == 0 else dcg / idcg


def metric_names(ks: Sequence[int] = K_VALUES) -> list[str]:
    """The upstream view's per-question names, in upstream's report order, each under the `upstream.` prefix."""
    at_k = [f"{PREFIX}{family}@{k}" for family in ("recall", "hitRate", "precision", "ndcg") for k in ks]
    return [*at_k, f"{PREFIX}mrr", f"{PREFIX}emptyRateOnAnswerable", f"{PREFIX}nonEmptyRateOnRefusal"]


def case_values(chunks: Ranked, relevant: Sequence[str], expect_refusal: bool,
                ks: Sequence[int] = K_VALUES) -> dict[str, float | None]:
    """One question's upstream-view values. The two empty rates are 0/1 per question on their own population
    (answerable questions, refusal questions), so their mean over the defined values is upstream's rate."""
    out: dict[str, float | None] = {}
    for family, kernel in (("recall", recall_at_k), ("hitRate", hit_rate_at_k), ("precision", precision_at_k),
                           ("ndcg", ndcg_at_k)):
        for k in ks:
            out[f"{PREFIX}{family}@{k}"] = kernel(chunks, relevant, k)
    out[f"{PREFIX}mrr"] = reciprocal_rank(chunks, relevant)
    empty = float(len(chunks) == 0)
    out[f"{PREFIX}emptyRateOnAnswerable"] = None if expect_refusal else empty
    out[f"{PREFIX}nonEmptyRateOnRefusal"] = (1.0 - empty) if expect_refusal else None
    return out


def mean_of(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values, summed in order as upstream sums them; None when none is defined."""
    defined = [v for v in values if v is not None]
    if not defined:
        return None
    total = 0.0
    for v in defined:
        total += v
    return total / len(defined)


def aggregate(cases: Sequence[dict[str, float | None]], names: Sequence[str]) -> dict[str, float | None]:
    """Each name's mean over the questions that define it (upstream's `aggregate`, by name)."""
    return {n: mean_of([c.get(n) for c in cases]) for n in names}
