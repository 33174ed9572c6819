from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant, window
from nomad_eval.metrics.registry import MetricSpec, register


def recall_at_k(ranked_docs: Sequence[str], rels: Relevance, k: int | None) -> float | None:
    rel = relevant(rels)
    if not rel:
        return None
    concrete = rel if isinstance(rel, set | frozenset) else set(rel)
    return len(concrete.intersection(window(ranked_docs, k))) / len(rel)  # distinct documents, without a set of them


SPEC = register(MetricSpec(
    "recall", "share of the relevant documents (grade > 0) among the first k distinct documents",
    parametrized=True, kernel=recall_at_k, level="document", headline=True, trec="recall",
))
