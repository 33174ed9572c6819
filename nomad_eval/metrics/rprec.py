from __future__ import annotations

from collections.abc import Sequence

from nomad_eval.metrics.ranking import Relevance, relevant
from nomad_eval.metrics.registry import MetricSpec, register


def r_precision(ranked_docs: Sequence[str], rels: Relevance, k: int | None = None) -> float | None:
    """Precision at R, R the number of relevant documents; takes no cut-off of its own."""
    rel = relevant(rels)
    if not rel:
        return None
    return sum(1 for d in ranked_docs[: len(rel)] if d in rel) / len(rel)


SPEC = register(MetricSpec(
    "rprec", "precision at R, R the number of relevant documents (no cut-off of its own)", kernel=r_precision,
    level="document", trec="Rprec",
))
