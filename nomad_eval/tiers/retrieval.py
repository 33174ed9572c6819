"""The retrieval tier: every golden through the pipeline, scored deterministically; the skeleton writes the run."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hydra.utils import instantiate

from nomad_eval.base.console import progress_bar
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import bootstrap, runtime
from nomad_eval.core.questions import Question, questions_from_cases
from nomad_eval.data.golden import Golden
from nomad_eval.harness.index import load_model, ready_store
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.search import StoreSearcher
from nomad_eval.harness.subject import subject_parts
from nomad_eval.harness.system import served_settings, system_settings
from nomad_eval.harness.trace import Tracer, timed
from nomad_eval.metrics.aggregate import by_tag, mean_metrics
from nomad_eval.metrics.registry import headline_names
from nomad_eval.metrics.separation import Scores
from nomad_eval.metrics.upstream.retrieval import metric_names as upstream_names
from nomad_eval.rag.pipeline import Pipeline, Retrieval, Stages
from nomad_eval.records import Case
from nomad_eval.report.details import RetrievalDetails
from nomad_eval.report.intervals import summarize_report, tag_intervals
from nomad_eval.report.schema import MetricInterval, Report, Subject, tag_columns
from nomad_eval.report.upstream_view import retrieval_view, view_ks, with_view_metrics
from nomad_eval.run.custom_retrieval import custom_order_warning, custom_search
from nomad_eval.run.queries import formed_queries, needs_chat, rewrite_chat
from nomad_eval.run.result import Artifacts, RunResult
from nomad_eval.run.retrieval_cases import (
    case_metrics,
    check_ks,
    identity,
    metric_names,
    retrieval_case,
    score_lists,
    separation,
)


def measure(config: RunConfig, out: Path) -> RunResult:
    """The retrieval run: every golden searched and scored (the skeleton writes `out`)."""
    t_start = time.perf_counter()
    ks = check_ks(config.ks, config.pipeline.top_k)  # refused (exit 2) before any work
    rt = runtime(config)
    timings: dict[str, float] = {}
    pipeline = instantiate(config.pipeline.spec())
    timings["load"] = time.perf_counter() - t_start

    tracer = Tracer()
    rescored: list[str] = []  # questions a custom pipeline's scores contradicted its order for
    ablation: dict[str, dict[str, float | None]] = {}
    if isinstance(pipeline, Pipeline):
        retrievals, ablation = _search(config, rt, pipeline, ks, tracer, timings)
    else:
        t = time.perf_counter()
        retrievals = custom_search(pipeline, rt, tracer, rescored)
        timings["search"] = time.perf_counter() - t

    t = time.perf_counter()
    top_k = int(config.pipeline.top_k or max(ks))
    scores = score_lists(retrievals, rt.goldens, rt if isinstance(pipeline, Pipeline) else None)
    up_ks = view_ks(ks)
    cases: list[Case] = [retrieval_case(g, r, ks, top_k, up_ks) for g, r in zip(rt.goldens, retrievals, strict=True)]
    report = _report(config, rt, isinstance(pipeline, Pipeline), cases, metric_names(ks), up_ks, scores)
    report.retrieval_part().ablation = ablation  # the part _report made
    if warning := custom_order_warning(rescored, len(rt.goldens)):
        report.warnings.append(warning)
    timings["metrics"] = time.perf_counter() - t
    report.timings = timings
    return RunResult(report, cases, Artifacts(tracer=tracer, files={"scores.json": json.dumps(scores)},
                                              scores=scores), started=t_start)


def _report(config: RunConfig, rt: Runtime, harness: bool, cases: list[Case], names: list[str], up_ks: list[int],
            scores: Scores) -> Report:
    """The run's report before its timings and verdict: means, intervals (one bootstrap for both views), tags,
    counts, separation, the subject and where the run came from."""
    goldens = rt.goldens
    per_case = [{str(n): v for n, v in c.metrics.items()} for c in cases]
    questions, metrics, intervals, view_intervals = _summaries(cases, names, upstream_names(up_ks), config)
    resolved = rt.resolved_config()
    report = Report(
        tier="retrieval",
        identity=identity(rt),
        config=resolved,
        system=system_settings(resolved, "retrieval") | served_settings("embedder", rt.embedder),
        metrics=metrics,
        intervals=intervals,
        metrics_by_tag=by_tag(per_case, [g.tags for g in goldens], names),
        counts={
            "goldens": len(goldens),
            "answerable": sum(not g.expect_refusal for g in goldens),
            "refusal": sum(g.expect_refusal for g in goldens),
            "chunks": len(rt.chunks),
            "documents": len(rt.documents),
            "embedding_model_calls": rt.cached_embedder.model_calls if harness else 0,
            # 1 when this process imported the embedding model's stack: a warm run must not.
            "model_loaded": int("sentence_transformers" in sys.modules),
            # How many stored vectors were compared with the embedding cache when the store was readied.
            **({"store_vectors_checked": rt.vector_check[0]} if rt.vector_check else {}),
        },
        details=RetrievalDetails(separation=separation(scores)),
        subject=Subject.model_validate(subject_parts(rt.documents, rt.chunks if harness else [], goldens)),
    )
    report.intervals_by_tag = tag_intervals(questions, tag_columns(report), bootstrap(config))
    report.upstream = retrieval_view(cases, up_ks, view_intervals)
    report.warnings += rt.golden_warnings
    return report


Intervals = dict[str, MetricInterval]


def _summaries(cases: list[Case], names: list[str], view_names: list[str], config: RunConfig
               ) -> tuple[list[Question], dict[str, float | None], Intervals, Intervals]:
    """The questions; this project's means and intervals of `names`; the upstream view's intervals of `view_names`.
    One resampling of the questions serves both views (one bootstrap per set of questions a metric is measured on)."""
    questions = questions_from_cases(with_view_metrics(cases))
    means, every = summarize_report(questions, [*names, *view_names], bootstrap(config))
    ours = set(names)
    return (questions, {n: means[n] for n in names}, {n: iv for n, iv in every.items() if n in ours},
            {n: iv for n, iv in every.items() if n not in ours})


def _search(config: RunConfig, rt: Runtime, pipeline: Pipeline, ks: list[int], tracer: Tracer,
            timings: dict[str, float]) -> tuple[list[Retrieval], dict[str, dict[str, float | None]]]:
    """Every golden through the harness pipeline, searching for the query its history rule forms."""
    goldens = rt.goldens
    t = time.perf_counter()
    # Model calls (rewrites) and one batched embedding call before the store is taken: per-question lookups
    # then cost no model time, and parallel jobs do not hold the store while a model loads.
    with rewrite_chat(config, rt, needs_chat(goldens, pipeline)) as chat:
        queries = [q.text for q in formed_queries(goldens, pipeline, chat, int(config.seed))]
    _embed_questions(rt, [pipeline.expand(q) for q in queries], bool(config.quiet))
    timings["embed_queries"] = time.perf_counter() - t
    retrievals: list[Retrieval] = []
    ablation: dict[str, dict[str, float | None]] = {}
    t = time.perf_counter()
    with ready_store(rt, bool(config.quiet)) as store:
        timings["store_ready"] = time.perf_counter() - t  # open; cold: embed, reopen and write
        searcher = StoreSearcher(rt.cached_embedder, store, config.threshold, rt.doc_ids, rt.fingerprint)
        t = time.perf_counter()
        with progress_bar("searching", len(goldens), bool(config.quiet)) as prog:
            for g, query in zip(goldens, queries, strict=True):
                with timed() as clock:
                    r = pipeline.retrieve(query, searcher)
                retrievals.append(r)
                tracer.retrieval(clock, r.expanded_query, r.chunks, pipeline.top_k, store.tag, g.id,
                                 rewritten=query if query != g.final_query else None, timings=r.timings,
                                 messages=[*g.history, {"role": "user", "content": g.final_query}])
                prog.advance(prog.task_ids[0])
        timings["search"] = time.perf_counter() - t
        if config.ablate:
            ablation = _ablate(pipeline, searcher, goldens, queries, ks)
    return retrievals, ablation


def _embed_questions(rt: Runtime, queries: list[str], quiet: bool) -> None:
    """Fill the cache with every question's vector, in parts, so a long suite shows its progress."""
    part = 2048  # large enough that the model's own batches stay full; one cache lookup per part
    load_model(rt.cached_embedder, rt.cached_embedder.missing_queries(queries), quiet)
    with progress_bar("embedding questions", len(queries), quiet) as prog:
        for i in range(0, len(queries), part):
            rt.cached_embedder.embed_queries(queries[i : i + part])
            prog.advance(prog.task_ids[0], len(queries[i : i + part]))


def _ablate(pipeline: Pipeline, searcher: StoreSearcher, goldens: list[Golden], queries: list[str], ks: list[int]
            ) -> dict[str, dict[str, float | None]]:
    """One search per question, scored several ways; glossary off needs a second search of the raw query."""
    g_on = pipeline.stages.glossary
    variants = {
        "raw cosine": Stages(glossary=g_on, boosts=False, same_doc_penalty=False),
        "+ boosts": Stages(glossary=g_on, boosts=True, same_doc_penalty=False),
        "+ same-doc penalty": Stages(glossary=g_on, boosts=True, same_doc_penalty=True),
    }
    rows: dict[str, list[dict[str, float | None]]] = {name: [] for name in variants}
    rows["glossary off"], rows["glossary on"] = [], []
    expanded = [pipeline.expand(q, Stages(glossary=True)) for q in queries]
    # Both query sets embedded in one batch each, not one model call per question.
    if not goldens:
        return {}
    vectors = searcher.embed_queries(expanded)
    raw_vectors = searcher.embed_queries(queries)
    for gi, g in enumerate(goldens):
        q = expanded[gi]
        pool = searcher.search(vectors[gi], pipeline.candidates)
        for name, st in variants.items():
            rows[name].append(case_metrics(g, pipeline.cut(pipeline.rank(q, pool, st)), ks))
        rows["glossary on"].append(case_metrics(g, pipeline.cut(pipeline.rank(q, pool)), ks))
        raw_q = queries[gi]
        raw_pool = searcher.search(raw_vectors[gi], pipeline.candidates)
        rows["glossary off"].append(case_metrics(g, pipeline.cut(pipeline.rank(raw_q, raw_pool)), ks))
    hk = int(pipeline.top_k) if int(pipeline.top_k) in ks else max(ks)
    names = [n for n in [f"hit@{min(ks)}", *headline_names("retrieval", hk)] if "@" in n]
    return {name: mean_metrics(r, names) for name, r in rows.items()}
