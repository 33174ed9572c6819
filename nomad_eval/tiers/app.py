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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from nomad_eval.backends.http_app import AppReply, HttpApp
from nomad_eval.backends.response_cache import AppResponseCache, ResponseCache
from nomad_eval.base.case import Case
from nomad_eval.base.console import err_console, map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.core.causes import cause_counts, label_cases, unsupported_numbers
from nomad_eval.core.questions import questions_from_cases, stable
from nomad_eval.data.answers import AppOutput, load_answers, repeats_of, write_answers
from nomad_eval.data.golden import Golden
from nomad_eval.harness.rundir import overrides, run_dir, sweep_id
from nomad_eval.harness.runtime import Runtime, corpus_fingerprint
from nomad_eval.harness.served import METRIC as PARITY_METRIC
from nomad_eval.harness.served import CorpusText, served_parity
from nomad_eval.harness.subject import subject_parts
from nomad_eval.harness.system import system_settings
from nomad_eval.judges.run_judges import check_judge_gates, rubrics
from nomad_eval.report.details import AppDetails, ServedIndex
from nomad_eval.report.intervals import summarize_report
from nomad_eval.report.provenance import provenance
from nomad_eval.report.schema import Identity, MetricInterval, Report, Subject
from nomad_eval.run.answering import ANSWERS
from nomad_eval.run.app_checks import answer_warnings, request_settings, unread_contexts
from nomad_eval.run.folder import RunResult, conclude
from nomad_eval.run.generation_cases import (
    attack_rates,
    mark_unstable,
    mode_metric_names,
    pattern_timeouts,
    score_case,
)
from nomad_eval.run.judging import judge_all
from nomad_eval.run.retrieval_cases import E2E_RETRIEVAL, document_metrics, retrieval_ks
from nomad_eval.run.settings import judge_settings, runtime

MODE = "e2e"  # the app retrieves and answers by itself: end to end
# The harness's own prompt planner's measures: an app's prompt is not the harness's, so they are not measured.
NOT_APPLICABLE = ("history_elided_rate", "chunks_dropped_rate", "prompt_token_error")
KINDS = ("answers", "http")  # app=answers reads a file, app=http asks the endpoint
OUTPUTS_FILE = "app_outputs.jsonl"  # the app's outputs as read or received, in the schema app=answers reads
APP_CACHE = "app_responses.sqlite"  # in paths.data_dir
CACHED_LABELS = MappingProxyType({"resumed": "kept from this run before it was interrupted (resume=true)",
                                  "cache": "read from the response cache (cache=true), not asked of the app"})
DEFECTS_FILE = "app_outputs_defects.txt"  # every defect of app.file, when there are more than an error lists


def run(cfg: DictConfig) -> int:
    t0 = time.perf_counter()
    app_settings(cfg)  # no app chosen: said before any work
    modes = [str(m) for m in cfg.mode.modes]
    if modes != [MODE]:
        raise NomadError(f"tier=app measures the app end to end: mode=e2e, not {modes} (oracle and noretrieval "
                         "need the harness's own prompt)", 2)
    check_judge_gates(judge_settings(cfg))
    rt = runtime(cfg)
    goldens = rt.goldens
    out = run_dir(cfg.paths.run_dir)
    outputs = collect(cfg, rt.data_dir, rt.all_goldens, goldens, out)
    timings = {"app": time.perf_counter() - t0}
    records = [outputs.records[(g.id, r)] for g in goldens for r in range(outputs.repeats)]
    write_answers(out / OUTPUTS_FILE, records)
    by_id = {g.id: g for g in goldens}
    ks = retrieval_ks(cfg)
    cases = [case(by_id[rec.id], rec, ks) for rec in records]
    for c in cases:
        if (source := outputs.cached.get((c["id"], c["repeat"]))) is not None:
            c["answered_from"] = source
    unstable = mark_unstable(cases)
    judges = _judges(cfg, cases, [[c.text for c in rec.contexts or [] if c.text] for rec in records], rt.data_dir)
    faithful = [max(r.scale) for r in rubrics(judge_settings(cfg)) if r.name == "faithfulness"]
    label_cases(cases, faithful[0] if faithful else 1)
    report = _report(cfg, rt, goldens, cases, outputs, unstable, judges, ks)
    served_index(report, rt, records)
    timings["total"] = time.perf_counter() - t0
    report.timings = timings
    report.warnings += rt.golden_warnings + pattern_timeouts(cases)
    settings = app_settings(cfg)
    body = request_settings(settings)["body"] if settings["kind"] == "http" else None
    report.warnings += answer_warnings(cases, body, outputs.unread)
    return conclude(cfg, out, RunResult(report, cases), ANSWERS)


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
    report.app_part().served_index = ServedIndex.model_validate(parity.summary())  # in the part _report made
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


def case(g: Golden, rec: AppOutput, ks: list[int]) -> Case:
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
    case: Case = {
        "id": g.id, "tags": g.tags, "relevant_doc_ids": g.relevant_doc_ids, "expect_refusal": g.expect_refusal,
        "mode": MODE, "repeat": rec.repeat, "query": g.final_query, "rewritten_query": None,
        # None, not []: without document ids nothing can be said about what retrieval missed.
        "retrieved": None if docs is None else [
            # The app gives no scores: 1/rank only orders the TREC export as the app ranked them.
            {"rank": i, "doc_id": c.doc_id or "", "chunk_id": injected[i - 1], "score": None, "final_score": 1.0 / i}
            for i, c in enumerate(rec.contexts or [], 1)],
        "injected": injected, "answer": rec.answer, "raw_answer": None,
        "passed": scored["passed"], "why": scored["why"], "refused": scored["refused"], "leaked": scored["leaked"],
        "groundedness": metrics["groundedness"],
        "unsupported_numbers": unsupported_numbers(rec.answer, context) if rec.contexts is not None else None,
        "prompt_tokens": rec.prompt_tokens, "completion_tokens": rec.completion_tokens,
        "latency_ms": rec.latency_ms, "metrics": metrics,
    }
    if g.attack:
        case["attack"] = g.attack.model_dump()
    return case


def _judges(cfg: DictConfig, cases: list[Case], passages: list[list[str]], data_dir: Path
            ) -> dict[str, dict[str, Any]]:
    cache = ResponseCache(data_dir / "responses.sqlite") if cfg.cache is not False and cfg.judge.rubrics else None
    try:
        return judge_all(cfg, cases, passages, cache)
    finally:
        if cache is not None:
            cache.close()


def identity(cfg: DictConfig, rt: Runtime) -> Identity:
    """The task (suite, tags, limit, mode) as any e2e run states it; the system is the app, not our pipeline."""
    settings = app_settings(cfg)
    return Identity(
        fingerprint=corpus_fingerprint(rt.documents, None, None), goldens_hash=rt.goldens_hash,
        suite=str(cfg.suite), tags=[str(t) for t in cfg.get("tags") or []], limit=cfg.get("limit"), mode=MODE,
        model=str(settings.get("name") or settings["kind"]), embedder="(the app's own)",
        pipeline=f"app:{settings['kind']}", judges=[r.key for r in rubrics(judge_settings(cfg))],
    )


def _report(cfg: DictConfig, rt: Runtime, goldens: list[Golden], cases: list[Case], outputs: Outputs,
            unstable: list[str], judges: dict[str, dict[str, Any]], ks: list[int]) -> Report:
    questions = questions_from_cases(cases)
    if cfg.compare.get("exclude_unstable"):
        questions = stable(questions)
    names = mode_metric_names(MODE)
    if any(c["retrieved"] is not None for c in cases):
        names += [f"{MODE}.{f}@{k}" for f in E2E_RETRIEVAL for k in ks]
    metrics, intervals = summarize_report(questions, names, cfg)
    config = rt.resolved_config()
    return Report(
        tier="generation", identity=identity(cfg, rt), config=config, metrics=metrics, intervals=intervals,
        system=system_settings(config, "app"),
        counts={"goldens": len(goldens), "cases": len(cases), "repeats": outputs.repeats,
                "model_calls": outputs.calls, "cache_hits": outputs.cache_hits, "unstable": len(unstable),
                "with_contexts": sum(c["retrieved"] is not None or bool(c["injected"]) for c in cases)},
        details=AppDetails(unstable=unstable, judges=judges, causes=cause_counts(cases),
                           attacks=attack_rates(cases, [])),
        subject=Subject.model_validate(subject_parts(rt.documents, [], goldens)),
        provenance=provenance(), overrides=overrides(), sweep_id=sweep_id(),
    )


@dataclass
class Outputs:
    """Every (golden id, repeat)'s record, the repeats per golden, and what the calls cost."""

    records: dict[tuple[str, int], AppOutput]
    repeats: int
    calls: int = 0
    cache_hits: int = 0
    cached: dict[tuple[str, int], str] = field(default_factory=dict)  # (id, repeat) -> "resumed" or "cache"
    unread: str | None = None  # a passage list the responses hold that app.contexts_path does not read


def app_settings(cfg: DictConfig) -> dict[str, Any]:
    """The `app` group as plain values; a run without one is told which to choose."""
    if cfg.get("app") is None:
        raise NomadError("tier=app needs the app's outputs: app=answers app.file=<outputs.jsonl>, or app=http "
                         "app.url=<endpoint> (docs/app.md)", 2)
    settings: dict[str, Any] = OmegaConf.to_container(cfg.app, resolve=True)  # type: ignore[assignment]
    if settings.get("kind") not in KINDS:
        raise NomadError(f"app.kind={settings.get('kind')!r}: choose {' or '.join(KINDS)}", 2)
    return settings


def collect(cfg: DictConfig, data_dir: Path, suite: list[Golden], goldens: list[Golden], folder: Path) -> Outputs:
    settings = app_settings(cfg)
    if settings["kind"] == "answers":
        records = load_answers(Path(str(settings["file"])), suite, goldens, folder / DEFECTS_FILE)
        # Only the selected goldens' records (a file may answer the whole suite while tags/limit pick a few).
        wanted = {g.id for g in goldens}
        records = {k: v for k, v in records.items() if k[0] in wanted}
        return Outputs(records, repeats_of(records))
    app = HttpApp(**request_settings(settings))
    use = CacheUse(str(run_dir(cfg.paths.run_dir).resolve()), bool(cfg.resume), cfg.cache is True)
    if use.reuse:
        err_console.print(f"cache=true: answers of earlier runs are read from {data_dir / APP_CACHE}, so an app "
                          "redeployed at the same URL is not asked again for them (the default asks it every time)",
                          markup=False)
    cache = AppResponseCache(data_dir / APP_CACHE) if cfg.cache is not False else None
    try:
        # The app's own variation is unknown (it is the system under test), so a null `repeats` samples it.
        if str(cfg.repeats) == "auto":
            raise NomadError("repeats=auto: tier=generation only for now; tier=app takes repeats=N", 2)
        repeats = int(cfg.sample_repeats if cfg.repeats is None else cfg.repeats)
        out = ask_all(app, cache, use, goldens, max(1, repeats), bool(cfg.quiet))
    finally:
        app.close()
        if cache is not None:
            cache.close()
    if out.cached:
        sources = Counter(out.cached.values())
        err_console.print(f"app: {out.calls} answer(s) asked of the app, " + ", ".join(
            f"{n} {CACHED_LABELS[s]}" for s, n in sorted(sources.items())), markup=False)
    return out


@dataclass(frozen=True)
class CacheUse:
    """Which of the app's cached answers a run may read. A new run reads none: the app under test answers every
    golden and repeat. `resume`: this run's own answers (kept under its run folder) from before it was interrupted;
    `reuse` (an explicit cache=true): any earlier run's."""

    run: str
    resume: bool
    reuse: bool


def _cached(cache: AppResponseCache | None, use: CacheUse, app: HttpApp, g: Golden, keys: tuple[str, str]
            ) -> tuple[AppReply, str] | None:
    """The cached reply this run may use and where it came from; a row that no longer parses is asked again."""
    if cache is None:
        return None
    for source, key, allowed in (("resumed", keys[0], use.resume), ("cache", keys[1], use.reuse)):
        hit = cache.get(key) if allowed else None
        if hit is not None:
            try:
                return app.parse(hit[0], hit[1], g.id), source
            except NomadError:
                continue
    return None


def ask_all(app: HttpApp, cache: AppResponseCache | None, use: CacheUse, goldens: list[Golden], repeats: int,
            quiet: bool) -> Outputs:
    """Each golden asked `repeats` times, up to app.concurrency requests at once, within app.deadline. Only a
    response that parses into an answer is cached (a null answer or a 200 carrying an error is asked again)."""
    tasks = [(g, r) for g in goldens for r in range(repeats)]
    ident = app.identity()
    out = Outputs({}, repeats)
    app.open()

    def one(task: tuple[Golden, int]) -> tuple[AppOutput, str | None]:
        g, r = task
        req = app.request(g.id, g.final_query, g.history)
        keys = (req.key(ident, r, use.run), req.key(ident, r))
        hit = _cached(cache, use, app, g, keys)
        if hit is not None:
            return output(g.id, r, hit[0]), hit[1]
        response, latency = app.send(req)
        if (unread := unread_contexts(response, app.paths["contexts"])) is not None:
            out.unread = unread
        reply = app.parse(response, latency, g.id)
        if cache is not None:
            for key in keys:
                cache.put(key, response, latency)
        return output(g.id, r, reply), None

    for rec, source in map_in_order(one, tasks, app.concurrency, f"asking the app ({app.name})", quiet):
        out.records[(rec.id, rec.repeat)] = rec
        if source is not None:
            out.cached[(rec.id, rec.repeat)] = source
        out.cache_hits += source is not None
        out.calls += source is None
    return out


def output(golden_id: str, repeat: int, reply: AppReply) -> AppOutput:
    """The reply as a record of the outputs file (its wire names, so the file and the HTTP run read alike)."""
    contexts = None if reply.contexts is None else [
        {k: v for k, v in (("docId", d or None), ("text", t)) if v is not None} for d, t in reply.contexts]
    return AppOutput.model_validate({"id": golden_id, "answer": reply.answer, "contexts": contexts, "repeat": repeat,
                                     "latencyMs": reply.latency_ms, "promptTokens": reply.prompt_tokens,
                                     "completionTokens": reply.completion_tokens})
