"""The generation tier: every golden through a chat model with three kinds of context, scored deterministically."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.mock import MockModel, ceiling
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.judging import judge_settings
from nomad_eval.config.settings import bootstrap, runtime
from nomad_eval.core.causes import cause_counts, label_cases, unsupported_numbers
from nomad_eval.core.questions import questions_from_cases, stable
from nomad_eval.data.golden import Golden
from nomad_eval.harness.index import ready_store
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.search import StoreSearcher
from nomad_eval.harness.subject import subject_parts
from nomad_eval.harness.system import served_settings, system_settings
from nomad_eval.harness.trace import Tracer
from nomad_eval.judges.run_judges import check_judge_gates, rubrics
from nomad_eval.metrics.registry import MetricName
from nomad_eval.metrics.upstream.generation import case_values as up_case_values
from nomad_eval.metrics.upstream.generation import score_answer as up_score
from nomad_eval.rag.budget import Plan, TokenEstimator
from nomad_eval.records import AnswerCase, Attack, values
from nomad_eval.records.sections import AdaptiveRow, JudgeSection
from nomad_eval.report.details import CauseCounts, GenerationDetails, InfraFailure
from nomad_eval.report.intervals import summarize_report
from nomad_eval.report.schema import Identity, Report, Subject
from nomad_eval.report.upstream_answers import generation_view
from nomad_eval.run import generation_auto
from nomad_eval.run.answering import (
    ChatSetup,
    answer_or_infra,
    answer_plan,
    calibrate_estimator,
    open_chat,
    plan_prompt,
    prompt_context,
)
from nomad_eval.run.generation_cases import (
    MODES,
    attack_rates,
    decomposition,
    mark_unstable,
    mode_metric_names,
    mode_metrics,
    pattern_timeouts,
    position_analysis,
    repeats_for,
    score_case,
    sizes,
)
from nomad_eval.run.generation_context import GoldenContext, build_contexts
from nomad_eval.run.judging import corrected_judges, judge_all
from nomad_eval.run.queries import formed_queries
from nomad_eval.run.result import Artifacts, RunResult
from nomad_eval.run.retrieval_cases import (
    E2E_RETRIEVAL,
    document_metrics,
    ranked_documents,
    retrieval_ks,
    retrieved_rows,
)
from nomad_eval.run.retrieval_cases import identity as retrieval_identity


def infra_outcomes(w: _Work, answers: list[tuple[str, str, int | None] | str]
                   ) -> tuple[list[tuple[str, str, int | None]], list[InfraFailure]]:
    """The answers of the calls that returned one (w.tasks keeps only theirs), and a record of each call the
    infrastructure failed: question key, repeat, reason."""
    kept, tasks = [], []
    infra: list[InfraFailure] = []
    for task, a in zip(w.tasks, answers, strict=True):
        gi, mode, r = task
        if isinstance(a, str):
            infra.append(InfraFailure(key=f"{mode}:{w.goldens[gi].id}", repeat=r, reason=a))
        else:
            kept.append(a)
            tasks.append(task)
    w.tasks = tasks
    return kept, infra


@dataclass
class _Work:
    """What the model answers: each golden's context, each (golden, mode) prompt and every (golden, mode, repeat)."""

    goldens: list[Golden]
    modes: list[str]
    contexts: list[GoldenContext]
    plans: dict[tuple[int, str], Plan]
    tasks: list[tuple[int, str, int]]


def measure(config: RunConfig, out: Path) -> RunResult:
    """The generation run: every golden answered in every mode, scored and judged (the skeleton writes `out`)."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    rt = runtime(config)
    goldens = rt.goldens
    modes = [str(m) for m in config.mode.modes]
    if unknown := set(modes) - set(MODES):
        raise NomadError(f"unknown mode(s) {sorted(unknown)}; choose from {', '.join(MODES)} or all", 2)
    check_judge_gates(judge_settings(config))  # an uncalibrated judge in a gate: refused before any model call
    s = open_chat(config, rt, "generation")
    tracer = Tracer()
    # Model calls (token calibration, query rewrites) happen before the store is taken, so parallel jobs
    # sharing the embedded store wait for each other's searches only, never for each other's models.
    est = calibrate_estimator(rt, s.chat, s.options)
    contexts = _contexts(config, rt, modes, s, tracer)
    timings["retrieval"] = time.perf_counter() - t0

    plans = {(gi, mode): plan_prompt(goldens[gi], contexts[gi].passages(mode), s, config, est)
             for gi in range(len(goldens)) for mode in modes}
    w = _Work(goldens, modes, contexts, plans, [])
    t = time.perf_counter()
    repeats, why, adaptive, results = _ask(config, rt, s, w)
    asked = len(w.tasks)
    answers, infra = infra_outcomes(w, results)
    timings["generation"] = time.perf_counter() - t
    if not answers:
        raise NomadError(f"every model call failed, e.g. {infra[0].reason}" if infra else "nothing to answer")

    cases = _scored_cases(w, answers, retrieval_ks(config))
    unstable = mark_unstable(cases)
    judges = judge_all(config, cases, [[x.text for x in w.plans[(gi, mode)].passages] for gi, mode, _ in w.tasks],
                     s.chat.cache)
    # After the judges: a faithfulness verdict is evidence for a cause. Written on every case, counted per question.
    faithful = [max(r.scale) for r in rubrics(judge_settings(config)) if r.name == "faithfulness"]
    label_cases(cases, faithful[0] if faithful else 1)
    report = _report(config, rt, s, est, w, cases, repeats, unstable, judges)
    part = report.generation_part()  # the part _report made
    part.repeats_reason, part.adaptive = why, adaptive
    if adaptive:
        report.system["repeats"] = "auto"
    part.infra = infra
    report.counts["calls_asked"], report.counts["infra"] = asked, len(infra)
    if judges:
        part.judge_corrected = dict(corrected_judges(config, report, cases, out))
    timings["total"] = time.perf_counter() - t0
    report.timings = timings
    _warn(report, rt, cases)
    s.close()
    return RunResult(report, cases, Artifacts(tracer=tracer))


def _ask(config: RunConfig, rt: Runtime, s: ChatSetup, w: _Work
         ) -> tuple[int, str, list[AdaptiveRow], list[tuple[str, str, int | None] | str]]:
    """Every call's result in the order of w.tasks (which it fills): `repeats` answers a prompt, or as many as
    `repeats=auto` decides (run/generation_auto.py); the repeats, why, and auto's per-question table."""
    def answer(tasks: list[tuple[int, str, int]]) -> list[tuple[str, str, int | None] | str]:
        return answer_or_infra(s, [(w.plans[(gi, mode)], r) for gi, mode, r in tasks],
                               f"generating ({s.model.name})", bool(config.quiet))

    if not generation_auto.is_auto(config):
        repeats, why = repeats_for(config, s.chat, s.options, list(w.plans.values()))
        w.tasks = [(gi, mode, r) for gi in range(len(w.goldens)) for mode in w.modes for r in range(repeats)]
        return repeats, why, [], answer(w.tasks)

    def passed(task: tuple[int, str, int], a: tuple[str, str, int | None] | str) -> bool | None:
        p = w.plans[(task[0], task[1])]
        return None if isinstance(a, str) else score_case(
            w.goldens[task[0]], a[1], prompt_context(p), p.elided_history, p.dropped_passages, p.estimated_tokens,
            a[2])["passed"]

    provisional = Report(tier="generation", identity=_identity(config, rt), config=rt.resolved_config(),
                         system=system_settings(rt.resolved_config(), "generation"),
                         subject=Subject.model_validate(subject_parts(rt.documents, rt.chunks, w.goldens)))
    keys = {f"{mode}:{w.goldens[gi].id}": (gi, mode) for gi in range(len(w.goldens)) for mode in w.modes}
    w.tasks, results, repeats, why, rows = generation_auto.run_auto(config, provisional, keys, answer, passed)
    return repeats, why, rows, results


def _identity(config: RunConfig, rt: Runtime) -> Identity:
    return retrieval_identity(rt).model_copy(update={"mode": str(config.mode.name), "model": str(config.model.name),
                                                     "judges": [r.key for r in rubrics(judge_settings(config))]})


def _contexts(config: RunConfig, rt: Runtime, modes: list[str], s: ChatSetup, tracer: Tracer) -> list[GoldenContext]:
    """Each golden's retrieved and oracle passages; the store is taken only when a mode retrieves."""
    goldens = rt.goldens
    queries = formed_queries(goldens, s.pipeline, s.chat, int(config.seed))
    with ready_store(rt, bool(config.quiet)) if "e2e" in modes else nullcontext() as store:
        searcher = None
        if store is not None:
            searcher = StoreSearcher(rt.cached_embedder, store, config.threshold, rt.doc_ids, rt.fingerprint)
        elif "oracle" in modes:
            # Oracle ordering reads chunk embeddings from the cache; fill it without touching a store.
            rt.cached_embedder.embed_documents([c.text for c in rt.chunks])
        return build_contexts(rt, goldens, modes, s.pipeline, searcher, queries, tracer)


def _scored_cases(w: _Work, answers: list[tuple[str, str, int | None]], ks: list[int]) -> list[AnswerCase]:
    cases = [_case(w.goldens[gi], w.contexts[gi], w.plans[(gi, mode)], mode, r, answers[i])
             for i, (gi, mode, r) in enumerate(w.tasks)]
    # Once per question: every repeat of a question read the same retrieved passages.
    e2e_scores = {gi: document_metrics(w.goldens[gi], ranked_documents(w.contexts[gi].retrieved), ks)
                  for gi, mode, _ in w.tasks if mode == "e2e"}
    for i, (gi, mode, _) in enumerate(w.tasks):
        if mode == "e2e":
            cases[i] = cases[i].model_copy(update={"metrics": {**cases[i].metrics, **values(e2e_scores[gi])}})
    return cases


def _report(config: RunConfig, rt: Runtime, s: ChatSetup, est: TokenEstimator, w: _Work, cases: list[AnswerCase],
            repeats: int, unstable: list[str], judges: JudgeSection) -> Report:
    questions = questions_from_cases(cases)
    if config.compare.exclude_unstable:  # upstream NOMAD's means, for drop-in comparisons with its numbers
        questions = stable(questions)
    modes = w.modes
    names = [n for m in modes for n in mode_metric_names(m)]
    names += [f"e2e.{f}@{k}" for f in E2E_RETRIEVAL for k in retrieval_ks(config)] if "e2e" in modes else []
    metrics, intervals = summarize_report(questions, names, bootstrap(config))
    is_mock = isinstance(s.model, MockModel)
    mock_cases = cases if is_mock else _mock_cases(w.goldens, w.contexts, w.plans, modes)
    ident = _identity(config, rt)
    # model.num_ctx: null (model=smollm2) is the model file's own context: the report names the number used.
    system = system_settings(rt.resolved_config(), "generation") | {"model.num_ctx": str(s.model.num_ctx),
                                                                      "repeats": str(repeats)} \
        | served_settings("model", s.model) | served_settings("embedder", rt.embedder)
    return Report(
        tier="generation", identity=ident, config=rt.resolved_config(), metrics=metrics, intervals=intervals,
        system=system,
        counts={"goldens": len(w.goldens), "cases": len(cases), "repeats": repeats, "model_calls": s.chat.calls,
                "cache_hits": s.chat.hits, "unstable": len(unstable),
                "rewritten_queries": sum(c.rewritten for c in w.contexts)},
        details=GenerationDetails(
            decomposition=decomposition(metrics) if len(modes) == len(MODES) else None,
            # The extractive ceiling on exactly the prompts the real model saw.
            mock_line={} if is_mock else {
                m: {MetricName.parse(k).bare: v for k, v in mode_metrics(mock_cases, m).items()} for m in modes},
            unstable=unstable,
            chars_per_token=est.chars_per_token, judges=judges,
            position=position_analysis(cases) if "e2e" in modes else None,
            causes=CauseCounts.model_validate(cause_counts(cases)),
            sizes=sizes(cases, int(config.stats.resamples), int(config.seed)),
            attacks=attack_rates(cases, mock_cases)),
        subject=Subject.model_validate(subject_parts(rt.documents, rt.chunks, w.goldens)),
        upstream=generation_view(cases, bootstrap(config)),
    )


def _warn(report: Report, rt: Runtime, cases: list[AnswerCase]) -> None:
    report.warnings += rt.golden_warnings
    report.warnings += pattern_timeouts(cases)


def _case(g: Golden, ctx: GoldenContext, p: Plan, mode: str, repeat: int, ans: tuple[str, str, int | None]
          ) -> AnswerCase:
    raw, answer, real = ans
    context = prompt_context(p)
    scored = score_case(g, answer, context, p.elided_history, p.dropped_passages, p.estimated_tokens, real)
    case = AnswerCase(
        id=g.id, tags=tuple(g.tags), relevant_doc_ids=tuple(g.relevant_doc_ids), expect_refusal=g.expect_refusal,
        mode=mode, repeat=repeat, query=g.final_query,
        rewritten_query=ctx.query if ctx.rewritten else None, retrieval_query=ctx.query,
        retrieved=retrieved_rows(ctx.retrieved) if mode == "e2e" else (),
        injected=tuple(x.chunk_id for x in p.passages),
        answer=answer, raw_answer=raw if raw != answer else None,
        passed=scored["passed"], why=scored["why"], refused=scored["refused"], leaked=scored["leaked"],
        groundedness=scored["metrics"]["groundedness"], unsupported_numbers=tuple(unsupported_numbers(answer, context)),
        prompt_tokens=real, estimated_prompt_tokens=p.estimated_tokens, elided_history=p.elided_history,
        dropped_chunks=p.dropped_passages, metrics=values(scored["metrics"]),
        # Upstream NOMAD's own scoring (report/upstream_view.py).
        upstream=values(dict(up_case_values(up_score(answer, g.must_include, g.must_not_include, g.expect_refusal)))),
    )
    if g.attack:  # attack suites: family, planted documents
        case = case.model_copy(update={"attack": Attack.model_validate(g.attack.model_dump())})
    return case


def _mock_cases(goldens: list[Golden], contexts: list[GoldenContext], plans: dict[tuple[int, str], Plan],
                modes: list[str]) -> list[AnswerCase]:
    """The mock's cases on exactly the prompts the real model saw."""
    mock = CachedChat(ceiling(), None)
    cases = []
    for gi, g in enumerate(goldens):
        for mode in modes:
            p = plans[(gi, mode)]
            cases.append(_case(g, contexts[gi], p, mode, 0, answer_plan(mock, p, ChatOptions(), 0)))
    mark_unstable(cases)
    return cases

