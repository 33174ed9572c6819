"""tier=app: the user's own app evaluated as it runs, from the answers it gave (a JSONL file, or its HTTP endpoint
called for each golden). Scored as the generation tier scores its e2e mode: the same case records, metrics,
judges, failure causes, report, compare and gate, so an app run compares with any e2e generation run.

The outputs come from a JSONL file the app wrote (`app=answers`), or its HTTP endpoint called for each golden
(`app=http`); both give the same records, in the schema of nomad_eval/data/answers.py. What the app did not
expose is not measured (null), never guessed: without contexts there is no groundedness context, no retrieval
measure and no retrieval-miss cause; the harness's prompt-budget measures do not apply.
"""

from __future__ import annotations

import time
from pathlib import Path

from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.judging import judge_settings
from nomad_eval.config.settings import bootstrap, runtime
from nomad_eval.core.causes import cause_counts, label_cases, unsupported_numbers
from nomad_eval.core.questions import questions_from_cases, stable
from nomad_eval.data.answers import AppOutput, write_answers
from nomad_eval.data.golden import Golden
from nomad_eval.harness.runtime import Runtime, corpus_fingerprint
from nomad_eval.harness.served import METRIC as PARITY_METRIC
from nomad_eval.harness.served import CorpusText, served_parity
from nomad_eval.harness.subject import subject_parts
from nomad_eval.harness.system import system_settings
from nomad_eval.judges.run_judges import check_judge_gates, rubrics
from nomad_eval.records import AnswerCase, Attack, Hit, values
from nomad_eval.records.sections import JudgeSection
from nomad_eval.report.details import AppDetails, CauseCounts
from nomad_eval.report.intervals import summarize_report
from nomad_eval.report.schema import Identity, MetricInterval, Report, Subject
from nomad_eval.run.app_checks import answer_warnings, request_settings
from nomad_eval.run.app_outputs import Outputs, app_settings, collect
from nomad_eval.run.generation_cases import (
    attack_rates,
    mark_unstable,
    mode_metric_names,
    pattern_timeouts,
    score_case,
)
from nomad_eval.run.judging import judge_all
from nomad_eval.run.result import RunResult
from nomad_eval.run.retrieval_cases import E2E_RETRIEVAL, document_metrics, retrieval_ks

MODE = "e2e"  # the app retrieves and answers by itself: end to end
# The harness's own prompt planner's measures: an app's prompt is not the harness's, so they are not measured.
NOT_APPLICABLE = ("history_elided_rate", "chunks_dropped_rate", "prompt_token_error")
OUTPUTS_FILE = "app_outputs.jsonl"  # the app's outputs as read or received, in the schema app=answers reads


def measure(config: RunConfig, out: Path) -> RunResult:
    """The app run: every golden asked of the app, scored and judged (the skeleton writes `out`)."""
    t0 = time.perf_counter()
    app_settings(config)  # no app chosen: said before any work
    modes = [str(m) for m in config.mode.modes]
    if modes != [MODE]:
        raise NomadError(f"tier=app measures the app end to end: mode=e2e, not {modes} (oracle and noretrieval "
                         "need the harness's own prompt)", 2)
    check_judge_gates(judge_settings(config))
    rt = runtime(config)
    goldens = rt.goldens
    outputs = collect(config, rt.data_dir, rt.all_goldens, goldens, out)
    timings = {"app": time.perf_counter() - t0}
    records = [outputs.records[(g.id, r)] for g in goldens for r in range(outputs.repeats)]
    write_answers(out / OUTPUTS_FILE, records)
    by_id = {g.id: g for g in goldens}
    ks = retrieval_ks(config)
    cases = [case(by_id[rec.id], rec, ks) for rec in records]
    for i, c in enumerate(cases):
        if (source := outputs.cached.get((c.id, c.repeat))) is not None:
            cases[i] = c.model_copy(update={"answered_from": source})
    unstable = mark_unstable(cases)
    judges = _judges(config, cases, [[c.text for c in rec.contexts or [] if c.text] for rec in records], rt.data_dir)
    faithful = [max(r.scale) for r in rubrics(judge_settings(config)) if r.name == "faithfulness"]
    label_cases(cases, faithful[0] if faithful else 1)
    report = _report(config, rt, goldens, cases, outputs, unstable, judges, ks)
    served_index(report, rt, records)
    timings["total"] = time.perf_counter() - t0
    report.timings = timings
    report.warnings += rt.golden_warnings + pattern_timeouts(cases)
    settings = app_settings(config)
    body = request_settings(settings)["body"] if settings["kind"] == "http" else None
    report.warnings += answer_warnings(cases, body, outputs.unread)
    return RunResult(report, cases)


def served_index(report: Report, rt: Runtime, records: list[AppOutput]) -> None:
    """The passages with text the app served, matched against the corpus under test (not its distractors):
    `app.current_context_rate` with its n and Wilson interval, the stale documents named."""
    passages = [(c.doc_id, c.text) for rec in records for c in rec.contexts or [] if c.text]
    if not passages:
        return
    parity = served_parity(CorpusText.of(rt.corpus_documents), passages)
    current = parity.share("current")
    report.metrics[PARITY_METRIC] = current["value"]
    report.intervals[PARITY_METRIC] = MetricInterval(n=current["n"], low=current["low"], high=current["high"])
    report.app_part().served_index = parity.summary()  # in the part _report made
    report.warnings += parity.warnings()
    for line in parity.warnings():
        err_console.print(f"warning: {line}", markup=False)


def _context_text(rec: AppOutput, g: Golden) -> str:
    """What the answer may draw on: the passages the app exposed (with their document ids) and the history."""
    passages = [f"{c.doc_id or ''}\n{c.text or ''}" for c in rec.contexts or []]
    return "\n".join(passages) + "\n" + "\n".join(m["content"] for m in g.history)


def _ranked(rec: AppOutput) -> list[str] | None:
    """The app's contexts as distinct documents in rank order; None when any context has no document id."""
    if rec.contexts is None or any(c.doc_id is None for c in rec.contexts):
        return None
    return list(dict.fromkeys(str(c.doc_id) for c in rec.contexts))


def case(g: Golden, rec: AppOutput, ks: list[int]) -> AnswerCase:
    """One case record, shaped as the generation tier's e2e ones (compare, causes and the reports read them)."""
    context = _context_text(rec, g)
    scored = score_case(g, rec.answer, context, 0, 0, 0, rec.prompt_tokens)
    metrics = scored["metrics"] | dict.fromkeys(NOT_APPLICABLE)
    if rec.contexts is None:
        metrics["groundedness"] = None  # nothing to be grounded in was exposed
    docs = _ranked(rec)
    metrics |= document_metrics(g, docs, ks)
    # Chunk ids `<doc>#<rank>`: the app's passages have no ids of ours; the document part is what causes read.
    injected = [f"{c.doc_id or ''}#{i}" for i, c in enumerate(rec.contexts or [], 1)]
    case = AnswerCase(
        id=g.id, tags=tuple(g.tags), relevant_doc_ids=tuple(g.relevant_doc_ids), expect_refusal=g.expect_refusal,
        mode=MODE, repeat=rec.repeat, query=g.final_query, rewritten_query=None,
        # None, not (): without document ids nothing can be said about what retrieval missed.
        retrieved=None if docs is None else tuple(
            # The app gives no scores: 1/rank only orders the TREC export as the app ranked them.
            Hit(rank=i, doc_id=c.doc_id or "", chunk_id=injected[i - 1], score=None, final_score=1.0 / i)
            for i, c in enumerate(rec.contexts or [], 1)),
        injected=tuple(injected), answer=rec.answer, raw_answer=None,
        passed=scored["passed"], why=scored["why"], refused=scored["refused"], leaked=scored["leaked"],
        groundedness=metrics["groundedness"],
        unsupported_numbers=tuple(unsupported_numbers(rec.answer, context)) if rec.contexts is not None else None,
        prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens,
        latency_ms=rec.latency_ms, metrics=values(metrics),
    )
    if g.attack:
        case = case.model_copy(update={"attack": Attack.model_validate(g.attack.model_dump())})
    return case


def _judges(config: RunConfig, cases: list[AnswerCase], passages: list[list[str]], data_dir: Path
            ) -> JudgeSection:
    cache = ResponseCache(data_dir / "responses.sqlite") if config.cache is not False and config.judge.rubrics else None
    try:
        return judge_all(config, cases, passages, cache)
    finally:
        if cache is not None:
            cache.close()


def identity(config: RunConfig, rt: Runtime) -> Identity:
    """The task (suite, tags, limit, mode) as any e2e run states it; the system is the app, not our pipeline."""
    settings = app_settings(config)
    return Identity(
        fingerprint=corpus_fingerprint(rt.documents, None, None), goldens_hash=rt.goldens_hash,
        suite=str(config.suite), tags=[str(t) for t in config.tags or []], limit=config.limit, mode=MODE,
        model=str(settings.get("name") or settings["kind"]), embedder="(the app's own)",
        pipeline=f"app:{settings['kind']}", judges=[r.key for r in rubrics(judge_settings(config))],
    )


def _report(config: RunConfig, rt: Runtime, goldens: list[Golden], cases: list[AnswerCase], outputs: Outputs,
            unstable: list[str], judges: JudgeSection, ks: list[int]) -> Report:
    questions = questions_from_cases(cases)
    if config.compare.exclude_unstable:
        questions = stable(questions)
    names = mode_metric_names(MODE)
    if any(c.retrieved is not None for c in cases):
        names += [f"{MODE}.{f}@{k}" for f in E2E_RETRIEVAL for k in ks]
    metrics, intervals = summarize_report(questions, names, bootstrap(config))
    recorded = rt.resolved_config()
    return Report(
        tier="generation", identity=identity(config, rt), config=recorded, metrics=metrics, intervals=intervals,
        system=system_settings(recorded, "app"),
        counts={"goldens": len(goldens), "cases": len(cases), "repeats": outputs.repeats,
                "model_calls": outputs.calls, "cache_hits": outputs.cache_hits, "unstable": len(unstable),
                "with_contexts": sum(c.retrieved is not None or bool(c.injected) for c in cases)},
        details=AppDetails(unstable=unstable, judges=judges, causes=CauseCounts.model_validate(cause_counts(cases)),
                           attacks=attack_rates(cases, [])),
        subject=Subject.model_validate(subject_parts(rt.documents, [], goldens)),
    )


