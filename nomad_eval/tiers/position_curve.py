"""tier=position: the "lost in the middle" curve (Liu et al. 2023) for the user's own model and prompt.

Oracle-mode: each answerable golden's relevant passage is placed at every position 1..N among the N-1
top-ranked retrieved chunks of other documents (its distractors, in their retrieval order). Same question,
same passages, only the order changes. Prompts come from the generation tier's planner and answers through its
cached chat, so the curve reads on exactly the prompts the generation tier would build.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.mock import ceiling
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.base.errors import NomadError
from nomad_eval.base.patterns import search
from nomad_eval.config import RunConfig
from nomad_eval.config.settings import runtime
from nomad_eval.config.tiers import PositionTier
from nomad_eval.core.position import Curve, curve, place, positions_for
from nomad_eval.data.golden import Golden
from nomad_eval.harness.index import ready_store
from nomad_eval.harness.runtime import Runtime
from nomad_eval.harness.search import StoreSearcher
from nomad_eval.harness.system import served_settings, system_settings
from nomad_eval.rag.budget import Plan, TokenEstimator
from nomad_eval.rag.pipeline import Pipeline
from nomad_eval.rag.prompt import Passage
from nomad_eval.records import PositionCase
from nomad_eval.report.details import PositionCurve, PositionDetails, PositionPoint
from nomad_eval.report.schema import MetricInterval, Report
from nomad_eval.run.answering import (
    ChatSetup,
    answer_all,
    answer_plan,
    calibrate_estimator,
    open_chat,
    plan_prompt,
    prompt_context,
)
from nomad_eval.run.generation_cases import repeats_for, score_case
from nomad_eval.run.generation_context import _passage, oracle_passages
from nomad_eval.run.queries import formed_queries
from nomad_eval.run.result import Artifacts, RunResult
from nomad_eval.run.retrieval_cases import identity as retrieval_identity

SKIP_REFUSAL = "expects a refusal"
SKIP_DISTRACTORS = "fewer than N-1 distractors retrieved"
SKIP_RELEVANT = "no chunk of a relevant document"
SKIP_DROPPED = "the budget dropped a passage"


@dataclass(frozen=True)
class Setup:
    golden: Golden
    relevant: Passage
    distractors: list[Passage]
    answer_bearing: bool   # the relevant passage matches every mustInclude pattern


def relevant_passage(oracle: list[Passage], must_include: list[str]) -> tuple[Passage, bool]:
    """The passage that carries the answer: the most question-like chunk of a relevant document matching every
    mustInclude pattern; without one, the most question-like chunk (so the curve still runs, flagged)."""
    for p in oracle:
        if all(search(pat, p.text) for pat in must_include):
            return p, True
    return oracle[0], False


def _setups(rt: Runtime, goldens: list[Golden], queries: list[str], pipeline: Pipeline, searcher: StoreSearcher,
            k: int, skipped: dict[str, list[str]]) -> list[Setup]:
    titles = {d.doc_id: d.title for d in rt.documents}
    out = []
    for g, query in zip(goldens, queries, strict=True):
        oracle = oracle_passages(rt, g, pipeline, query)
        if not oracle:
            skipped.setdefault(SKIP_RELEVANT, []).append(g.id)
            continue
        # The whole reranked candidate pool, not only the top_k cut: N-1 may exceed top_k.
        pool = [_passage(c, titles) for c in pipeline.retrieve(query, searcher).candidates]
        # The k top-ranked chunks that are not from a relevant document, in retrieval order.
        ds = [p for p in pool if p.doc_id not in set(g.relevant_doc_ids)][:k]
        if len(ds) < k:
            skipped.setdefault(SKIP_DISTRACTORS, []).append(g.id)
            continue
        rel, bearing = relevant_passage(oracle, g.must_include)
        out.append(Setup(g, rel, ds, bearing))
    return out


def _case(s: Setup, position: int, p: Plan, repeat: int, ans: tuple[str, str, int | None]) -> PositionCase:
    raw, answer, real = ans
    context = prompt_context(p)
    scored = score_case(s.golden, answer, context, p.elided_history, p.dropped_passages, p.estimated_tokens, real)
    injected = [x.chunk_id for x in p.passages]
    return PositionCase(
        id=s.golden.id, tags=tuple(s.golden.tags), relevant_doc_ids=tuple(s.golden.relevant_doc_ids),
        position=position, repeat=repeat, query=s.golden.final_query,
        relevant_chunk=s.relevant.chunk_id, answer_bearing=s.answer_bearing,
        # Where the relevant passage actually sat once the budget had its say (None: it was dropped).
        relevant_at=injected.index(s.relevant.chunk_id) + 1 if s.relevant.chunk_id in injected else None,
        injected=tuple(injected), dropped_chunks=p.dropped_passages,
        answer=answer, raw_answer=raw if raw != answer else None,
        correctness=scored["metrics"]["correctness"], passed=scored["passed"], why=scored["why"],
        prompt_tokens=real, estimated_prompt_tokens=p.estimated_tokens,
    )


def by_question(cases: list[PositionCase]) -> dict[str, dict[int, float | None]]:
    """Each question's correctness at each position, its repeats averaged (None when one could not be judged)."""
    vals: dict[str, dict[int, list[float | None]]] = {}
    for c in cases:
        vals.setdefault(c.id, {}).setdefault(c.position, []).append(c.correctness)
    return {q: {p: None if None in v else sum(v) / len(v) for p, v in row.items()}  # type: ignore[arg-type]
            for q, row in vals.items()}


def curve_model(c: Curve, n: int, skipped: dict[str, list[str]], mock: dict[int, float | None]) -> PositionCurve:
    # The curve's own fields as the report names them, less the questions it left out (listed in `skipped`).
    fields = {k: v for k, v in vars(c).items() if k not in ("points", "excluded")}
    return PositionCurve(passages=n, skipped=skipped, **fields,
                         points=[PositionPoint(**vars(p), mock=mock.get(p.position)) for p in c.points])


def measure(config: RunConfig, out: Path) -> RunResult:
    """The position curve: the relevant passage moved through the context (the skeleton writes `out`)."""
    t0 = time.perf_counter()
    rt = runtime(config)
    n = config.tier_of(PositionTier).passages
    positions = _positions(config, n)
    s = open_chat(config, rt, "position")
    skipped: dict[str, list[str]] = {}
    est, setups = _prepare(config, rt, s, n, skipped)
    t_setup = time.perf_counter() - t0

    plans = {(si, pos): plan_prompt(st.golden, place(st.relevant, st.distractors, pos), s, config, est)
             for si, st in enumerate(setups) for pos in positions}
    repeats, _ = repeats_for(config, s.chat, s.options, list(plans.values()))
    tasks = [(si, pos, r) for si in range(len(setups)) for pos in positions for r in range(repeats)]
    t = time.perf_counter()
    answers = answer_all(s, [(plans[(si, pos)], r) for si, pos, r in tasks], f"position curve ({s.model.name})",
                         bool(config.quiet))
    t_gen = time.perf_counter() - t
    cases = [_case(setups[si], pos, plans[(si, pos)], r, answers[i]) for i, (si, pos, r) in enumerate(tasks)]
    c, dropped = _measure(config, cases, positions, skipped)
    kept = set(by_question(cases)) - set(dropped) - set(c.excluded)
    result = curve_model(c, n, skipped, _mock_curve(setups, plans, positions, kept))
    metrics, intervals = _curve_metrics(c)
    ident = retrieval_identity(rt).model_copy(update={
        "mode": "oracle", "model": str(config.model.name), "measures": [f"position {p}/{n}" for p in positions]})
    report = Report(
        tier="position", identity=ident, config=rt.resolved_config(), metrics=metrics, intervals=intervals,
        system=system_settings(rt.resolved_config(), "generation") | served_settings("model", s.model),
        details=PositionDetails(curve=result, chars_per_token=est.chars_per_token),
        counts={"goldens": len(rt.goldens), "questions": c.questions, "positions": len(positions), "passages": n,
                "repeats": repeats, "cases": len(cases), "model_calls": s.chat.calls, "cache_hits": s.chat.hits,
                **{f"skipped: {k}": len(v) for k, v in skipped.items()},
                "relevant passage without the answer text": sum(not st.answer_bearing for st in setups)},
        timings={"setup": t_setup, "generation": t_gen, "total": time.perf_counter() - t0},
    )
    report.warnings += rt.golden_warnings + _dropped_warnings(dropped)
    s.close()
    return RunResult(report, cases, Artifacts(exports=False))


def _positions(config: RunConfig, n: int) -> list[int]:
    try:
        return positions_for(n, [int(p) for p in config.tier_of(PositionTier).positions or []])
    except ValueError as exc:
        raise NomadError(f"tier.positions: {exc}", 2) from None


def _measure(config: RunConfig, cases: list[PositionCase], positions: list[int], skipped: dict[str, list[str]]
             ) -> tuple[Curve, list[str]]:
    """The curve over the questions every order of which ran as planned, and the questions a dropped passage
    took out; what left the curve is listed in `skipped`."""
    # A dropped passage moves the relevant one (or removes it): that question's orders are no longer the
    # experiment's, so it leaves the curve whole rather than at one position (the positions stay paired).
    dropped = sorted({c.id for c in cases if c.dropped_chunks})
    if dropped:
        skipped[SKIP_DROPPED] = dropped
    values = {q: row for q, row in by_question(cases).items() if q not in set(dropped)}
    c = curve(values, positions, int(config.seed), int(config.stats.resamples))
    if c.excluded:
        skipped["a pattern timed out at some position"] = c.excluded
    return c, dropped


def _prepare(config: RunConfig, rt: Runtime, s: ChatSetup, n: int, skipped: dict[str, list[str]]
             ) -> tuple[TokenEstimator, list[Setup]]:
    """The token estimator and each answerable golden's relevant passage and N-1 distractors; what cannot be set
    up is listed in `skipped`."""
    if refusals := [g.id for g in rt.goldens if g.expect_refusal]:
        skipped[SKIP_REFUSAL] = refusals
    answerable = [g for g in rt.goldens if not g.expect_refusal]
    est = calibrate_estimator(rt, s.chat, s.options)
    # Before the store is taken, as generation does.
    queries = [q.text for q in formed_queries(answerable, s.pipeline, s.chat, int(config.seed))]
    with ready_store(rt, bool(config.quiet)) as store:
        searcher = StoreSearcher(rt.cached_embedder, store, config.threshold, rt.doc_ids, rt.fingerprint)
        return est, _setups(rt, answerable, queries, s.pipeline, searcher, n - 1, skipped)


def _curve_metrics(c: Curve) -> tuple[dict[str, float | None], dict[str, MetricInterval]]:
    """Correctness at each position and the worst-minus-best gap, with the intervals they have."""
    metrics: dict[str, float | None] = {f"position_{p.position}.correctness": p.correctness for p in c.points}
    intervals = {f"position_{p.position}.correctness": MetricInterval(n=p.n, low=p.low, high=p.high)
                 for p in c.points if p.correctness is not None}
    metrics["position.worst_minus_best"] = c.delta
    if c.delta is not None:
        intervals["position.worst_minus_best"] = MetricInterval(n=c.questions, low=c.delta_low, high=c.delta_high)
    return metrics, intervals


def _dropped_warnings(dropped: list[str]) -> list[str]:
    if not dropped:
        return []
    return [f"the budget dropped a passage for {len(dropped)} question(s) ({', '.join(dropped[:5])}"
            f"{' …' if len(dropped) > 5 else ''}): not a clean experiment for them, left out of the curve; "
            "raise tier.chunk_share or model.num_ctx, or lower tier.passages"]


def _mock_curve(setups: list[Setup], plans: dict[tuple[int, int], Plan], positions: list[int], kept: set[str]
                ) -> dict[int, float | None]:
    """The extractive ceiling on exactly the prompts the model saw, over the curve's questions: where it is flat
    and the model's curve is not, the position is the model's doing, not the prompt's."""
    mock = CachedChat(ceiling(), None)
    out: dict[int, float | None] = {}
    for pos in positions:
        vals = [_case(s, pos, plans[(si, pos)], 0, answer_plan(mock, plans[(si, pos)], ChatOptions(), 0)).correctness
                for si, s in enumerate(setups) if s.golden.id in kept]
        known = [v for v in vals if v is not None]
        out[pos] = sum(known) / len(known) if known else None
    return out
