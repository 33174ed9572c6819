"""A user's own retriever (a pipeline that is not the harness's) asked each question alone and read as the
harness's own Retrieval: its list order is the ranking, its scores kept when they agree with that order."""

from __future__ import annotations

from typing import Any

from nomad_eval.base.errors import NomadError
from nomad_eval.core.runs import order_consistent, scores_from_order
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.trace import Tracer, timed
from nomad_eval.rag.pipeline import Retrieval, RetrievedChunk

CUSTOM_ORDER_WARNING = "custom pipeline scores disagree with its order; scored by list order"


def custom_order_warning(rescored: list[str], questions: int) -> str | None:
    """The report's warning when `custom_retrieve` scored some questions by list order, else None."""
    if not rescored:
        return None
    return f"{CUSTOM_ORDER_WARNING} ({len(rescored)} of {questions} questions, e.g. {rescored[0]!r})"


def custom_retrieve(fn: Any, query: str, doc_ids: set[str], rescored: list[str] | None = None) -> Retrieval:
    """A user's own pipeline: any callable returning ranked items with chunk_id, doc_id and score.

    The list order is what the pipeline means. When the scores would not reproduce it the way trec_eval reads a
    run (score descending, ties by id descending; for chunks, and for documents at their first chunk), the items
    are scored by their order instead and `query` is appended to `rescored` (see custom_order_warning).
    """
    items = list(fn(query))
    rows: list[tuple[str, str, float]] = []
    for i, it in enumerate(items, 1):
        get = it.get if isinstance(it, dict) else lambda k, _it=it: getattr(_it, k, None)
        doc, score = get("doc_id"), get("score")
        if doc not in doc_ids:
            # The system under test returned what it must not: a failure of it (exit 1), not of the setup.
            raise NomadError(f"leak guard: custom pipeline returned doc_id {doc!r}, not a document of the corpus", 1)
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise NomadError(f"custom pipeline: item {i} for query {query!r} has score {score!r}; a number is needed")
        rows.append((str(get("chunk_id") or f"{doc}#?"), str(doc), float(score)))
    first: dict[str, float] = {}
    for _, doc, score in rows:
        first.setdefault(doc, score)
    if not (order_consistent([(cid, s) for cid, _, s in rows]) and order_consistent(list(first.items()))):
        by_order = scores_from_order([cid for cid, _, _ in rows])
        rows = [(cid, doc, s) for (cid, doc, _), s in zip(rows, by_order, strict=True)]
        if rescored is not None:
            rescored.append(query)
    chunks = [RetrievedChunk(i, cid, doc, None, s) for i, (cid, doc, s) in enumerate(rows, 1)]
    return Retrieval(query, query, chunks, chunks)


def custom_search(pipeline: Any, rt: Runtime, tracer: Tracer, rescored: list[str]) -> list[Retrieval]:
    """A user's own retriever, asked each question alone; its answers traced as the harness's own searches."""
    retrievals = []
    for g in rt.goldens:
        with timed() as clock:
            r = custom_retrieve(pipeline, g.final_query, rt.doc_ids, rescored)
        retrievals.append(r)
        tracer.retrieval(clock, r.query, r.chunks, None, "custom", g.id,
                         messages=[*g.history, {"role": "user", "content": g.final_query}])
    return retrievals
