"""Per-golden retrieval scoring: pure functions from a Retrieval and a Golden to metric values.

Every measure comes from the registry: document-level kernels rank distinct documents, chunk-level ones the
chunks as returned, each at every k of `tier.ks` when it takes a cut-off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.core.evaluate import evaluate, ranking
from nomad_eval.data.golden import Golden
from nomad_eval.harness.runtime import Runtime
from nomad_eval.metrics import REGISTRY, MetricSpec
from nomad_eval.metrics.ranking import EMPTY, NON_EMPTY, RETURNED, recall_at_k
from nomad_eval.metrics.separation import Scores, SeparationRow, separation_row
from nomad_eval.metrics.upstream.retrieval import case_values as upstream_values
from nomad_eval.rag.pipeline import Retrieval, RetrievedChunk
from nomad_eval.records import Hit, RetrievalCase, values
from nomad_eval.report.schema import Identity

_LEVELS = {"document": 0, "chunk": 1, "case": 2}


def ranked_documents(chunks: list[RetrievedChunk]) -> list[str]:
    """Distinct documents, the unit of the @k window: a document's score is its best chunk's, and documents go
    in trec_eval's order of those scores (descending, ties by document id descending), so run.trec read by any
    trec tool ranks them exactly as the metrics did. For a list whose scores never increase this is the order
    the pipeline first returns them in, up to exact ties."""
    best: dict[str, float] = {}
    for c in chunks:
        if c.doc_id not in best or c.final_score > best[c.doc_id]:
            best[c.doc_id] = c.final_score
    return ranking(best)


def _specs() -> list[MetricSpec]:
    """The retrieval tier's measures: document level first, then chunk level, then per-case values; headline
    families first within a level (a stable sort of the registry's order)."""
    specs = [s for s in REGISTRY.values() if s.tier == "retrieval"]
    return sorted(specs, key=lambda s: (_LEVELS[s.level], not s.headline, not s.parametrized))


def metric_names(ks: Sequence[int]) -> list[str]:
    return [s.name(k) for s in _specs() for k in (ks if s.parametrized else [None])]


def ks_problems(ks: Sequence[Any], top_k: int | None) -> list[str]:
    """Why `tier.ks` cannot be measured: a cut-off below 1, or above the `pipeline.top_k` chunks a pipeline
    returns (documents never outnumber chunks, so @k would equal @top_k by construction)."""
    shown = "[" + ", ".join(str(k) for k in ks) + "]"
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if bad:
        return [f"tier.ks={shown}: {bad[0]!r} is not a cut-off; every k must be an integer of at least 1"]
    over = [k for k in ks if top_k is not None and k > top_k]
    if over:
        return [f"tier.ks={shown} holds {over[0]}, above pipeline.top_k={top_k}: the pipeline returns at most "
                f"{top_k} chunks, so @{over[0]} would equal @{top_k} by construction; drop it or raise "
                "pipeline.top_k"]
    return []


def check_ks(ks: Sequence[Any], top_k: int | None) -> list[int]:
    """The cut-offs, or NomadError (exit 2) naming tier.ks before any work is done."""
    problems = ks_problems(ks, top_k)
    if problems:
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2)
    return [int(k) for k in ks]


def case_metrics(golden: Golden, chunks: list[RetrievedChunk], ks: Sequence[int]) -> dict[str, float | None]:
    """Refusal goldens get only nonEmptyRateOnRefusal; answerable ones everything else (emptyRateOnAnswerable
    included), with the golden's grades."""
    out: dict[str, float | None] = {name: None for name in metric_names(ks)}
    if golden.expect_refusal:
        out[NON_EMPTY.name()] = float(len(chunks) > 0)
        return out
    grades = golden.grades
    ranked = {"document": ranked_documents(chunks), "chunk": [c.doc_id for c in chunks]}
    for spec in _specs():
        if spec.kernel is None:
            continue
        for k in ks if spec.parametrized else [None]:
            out[spec.name(k)] = spec.kernel(ranked[spec.level], grades, k)
    out[RETURNED.name()] = float(len(chunks))
    out[EMPTY.name()] = float(not chunks)
    return out


def retrieved_rows(chunks: list[RetrievedChunk]) -> tuple[Hit, ...]:
    return tuple(Hit(rank=c.rank, doc_id=c.doc_id, chunk_id=c.chunk_id, score=c.score, final_score=c.final_score)
                 for c in chunks)


def retrieval_miss(g: Golden, chunks: list[RetrievedChunk], top_k: int) -> str | None:
    if g.expect_refusal:
        return f"{len(chunks)} chunk(s) returned for a question the corpus cannot answer" if chunks else None
    missing = [d for d in g.relevant_doc_ids if d not in {c.doc_id for c in chunks[:top_k]}]
    return f"not in the top {top_k}: {', '.join(missing)}" if missing else None


def retrieval_case(g: Golden, r: Retrieval, ks: Sequence[int], top_k: int, upstream_ks: Sequence[int]
                   ) -> RetrievalCase:
    """`upstream_ks`: the upstream view's cut-offs (report/upstream_view.view_ks)."""
    return RetrievalCase(
        id=g.id, tags=tuple(g.tags), relevant_doc_ids=tuple(g.relevant_doc_ids), expect_refusal=g.expect_refusal,
        grades=g.grades, query=g.final_query, retrieval_query=r.query, expanded_query=r.expanded_query,
        retrieved=retrieved_rows(r.chunks), metrics=values(case_metrics(g, r.chunks, ks)),
        upstream=values(upstream_values([c.doc_id for c in r.chunks], g.relevant_doc_ids, g.expect_refusal,
                                        upstream_ks)),
        passed=None if g.expect_refusal else recall_at_k(ranked_documents(r.chunks), set(g.relevant_doc_ids),
                                                         top_k) == 1.0,
        why=retrieval_miss(g, r.chunks, top_k),
    )


# The e2e passages' retrieval measures, beside the answers they fed: tier "retrieval" specs, so outside the
# generation gate's headline set (ungated unless named in compare.metrics). A sweep reads them to learn which
# one predicts answers (core/rank_correlation.py).
E2E_RETRIEVAL = ("recall", "mrr", "ndcg")


def retrieval_ks(config: RunConfig) -> list[int]:
    """The gate's cutoff (`compare.headline_k`) and the run's `tier.ks`, where it sets any."""
    return sorted({int(config.compare.headline_k), *config.ks})


def document_metrics(g: Golden, docs: list[str] | None, ks: list[int]) -> dict[str, float | None]:
    """recall/mrr/ndcg@k of the documents an answer's retrieval ranked, by the registry's kernels (None for a
    refusal golden, or when the documents are not known: an app that exposed no document ids)."""
    names = [f"{f}@{k}" for f in E2E_RETRIEVAL for k in ks]
    scored = evaluate({g.id: g.grades}, {g.id: docs}, names) if docs is not None else {}
    return scored.get(g.id) or dict.fromkeys(names)


def identity(rt: Runtime) -> Identity:
    s, recorded = rt.settings, rt.settings.config  # the config as the run recorded it
    p = recorded["pipeline"]
    return Identity(
        fingerprint=rt.fingerprint, goldens_hash=rt.goldens_hash, suite=s.suite, tags=list(s.tags), limit=s.limit,
        top_k=p.get("top_k"), threshold=recorded.get("threshold"), min_final_score=p.get("min_final_score"),
        embedder=str(recorded["embedder"]["name"]), pipeline=s.pipeline_target, distractors=rt.distractor_name,
        measures=[f"@{int(k)}" for k in recorded["tier"].get("ks") or []],
    )


def score_lists(retrievals: list[Retrieval], goldens: list[Golden], rt: Runtime | None = None) -> Scores:
    """Relevant vs irrelevant scores of answerable questions: the data behind the separation table and plots.

    Raw cosine, given the run's `rt` (its own embedder): every question against every chunk of the corpus, from
    vectors already cached, because the search pool is cut at `threshold` and so cannot calibrate it. A custom
    pipeline (no embedder), and the final score (only reranked chunks have one): the candidate pool.
    `population` says which, for the table's labels and the plots. Each side is a Histogram's dict: counts of
    its values to 5 decimals (metrics/separation.py), whatever the number of pairs.
    """
    from nomad_eval.harness.cosines import corpus_cosines
    from nomad_eval.metrics.separation import CANDIDATE_POOL, EVERY_CHUNK, rounded

    answerable = [(r, g) for r, g in zip(retrievals, goldens, strict=True) if not g.expect_refusal]
    raw: dict[str, list[float]] = {"relevant": [], "irrelevant": []}
    final: dict[str, list[float]] = {"relevant": [], "irrelevant": []}
    for r, g in answerable:
        for c in r.candidates:
            label = "relevant" if c.doc_id in g.relevant_doc_ids else "irrelevant"
            if rt is None and c.score is not None:
                raw[label].append(round(c.score, 5))
            final[label].append(round(c.final_score, 5))
    out = Scores(raw={label: rounded(v) for label, v in raw.items()},
                 final={label: rounded(v) for label, v in final.items()},
                 population={"raw": CANDIDATE_POOL, "final": CANDIDATE_POOL})
    if rt is not None:
        queries = [r.expanded_query for r, _ in answerable]
        relevant = [set(g.relevant_doc_ids) for _, g in answerable]
        rel, irr = corpus_cosines(rt.cached_embedder, rt.chunks, queries, relevant)
        out["raw"] = {"relevant": rounded(rel), "irrelevant": rounded(irr)}
        out["population"]["raw"] = EVERY_CHUNK
    return out


def separation(scores: Scores) -> list[SeparationRow]:
    from nomad_eval.metrics.separation import distribution, sides

    pop = scores.get("population") or {}
    return [separation_row(f"{name} ({pop.get(key, 'candidate pool')})", flag, lab,
                           distribution(sides(scores, key)[lab]))
            for key, name, flag in (("raw", "raw cosine", "threshold"),
                                    ("final", "final score", "pipeline.min_final_score"))
            for lab in ("relevant", "irrelevant")]
