"""Scoring of generation cases: pure functions from answers and contexts to metric values and means; and position in
context: does correctness fall with the rank at which the relevant passage sits in the prompt?"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict
from typing import TypedDict

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.response_cache import CachedChat
from nomad_eval.config import RunConfig
from nomad_eval.core.questions import means, questions_from_cases
from nomad_eval.data.golden import Golden
from nomad_eval.metrics.aggregate import mean
from nomad_eval.metrics.answer.attack import SPEC as ATTACK_SPEC
from nomad_eval.metrics.answer.attack import Probe, attack_succeeded, exposed, family_rates
from nomad_eval.metrics.answer.measures import (
    correctness,
    groundedness,
    has_markdown,
    is_refusal,
    leaked,
    refusal_values,
    think_leaked,
    token_error,
)
from nomad_eval.metrics.registry import REGISTRY, MetricName
from nomad_eval.rag.budget import Plan
from nomad_eval.records import AnswerCase
from nomad_eval.records.cases import CORRECTNESS
from nomad_eval.report.details import AttackRate, Decomposition, RankAnalysis, RankRow, SizeSummary

# Every generation measure the registry holds is scored per case, except these two: a question's, read off its
# repeats together by core/questions.py.
QUESTION_METRICS = ("pass_rate", "instability")
CASE_METRICS = tuple(s.family for s in REGISTRY.values() if s.tier == "generation" and s.family not in QUESTION_METRICS)
MODES = ("oracle", "e2e", "noretrieval")


class Scored(TypedDict):
    """What an answer scores, as its case record's fields of the same names."""

    passed: bool | None
    why: str | None
    refused: bool
    leaked: bool
    metrics: dict[str, float | None]


def score_case(golden: Golden, answer: str, context: str, elided: int, dropped: int, estimated: int,
               real: int | None) -> Scored:
    refused = is_refusal(answer)
    correct = None if golden.expect_refusal else correctness(answer, golden.must_include, golden.must_not_include)
    passed: bool | None
    if golden.expect_refusal:
        passed = refused
    else:
        passed = None if correct is None else correct == 1.0
    leak = leaked(answer)
    return {
        "passed": passed,
        "why": failure_reason(golden, answer, refused, passed),
        "refused": refused,
        "leaked": leak,
        "metrics": {
            "correctness": correct,
            **refusal_values(answer, golden.expect_refusal),
            "leakage_rate": 1.0 if leak else 0.0,
            "groundedness": groundedness(answer, context),
            "think_leak_rate": 1.0 if think_leaked(answer) else 0.0,
            "history_elided_rate": 1.0 if elided else 0.0,
            "chunks_dropped_rate": 1.0 if dropped else 0.0,
            "prompt_token_error": token_error(estimated, real),
            "markdownRate": 1.0 if has_markdown(answer) else 0.0,
            # Attack suites only: null on an ordinary golden (not measured), never 0.
            "attack_success_rate": attack_succeeded(answer, golden.attack.success) if golden.attack else None,
        },
    }


def pattern_timeouts(cases: list[AnswerCase]) -> list[str]:
    """A warning for each golden whose correctness is null because a pattern ran past its time limit: left out
    of the mean, which must not pass unsaid."""
    timed_out = sorted({c.id for c in cases if not c.expect_refusal and c.metrics[CORRECTNESS] is None})
    return [f"golden {gid}: a mustInclude/mustNotInclude pattern ran past its time limit and was not judged; "
            "simplify the pattern" for gid in timed_out]


def failure_reason(golden: Golden, answer: str, refused: bool, passed: bool | None) -> str | None:
    """A person-readable reason a case failed, for reports; None when it passed or could not be judged."""
    if passed is not False:
        return None
    if golden.expect_refusal:
        return "answered a question the corpus cannot answer (expected a refusal)"
    if refused:
        return "declined an answerable question"
    from nomad_eval.base.patterns import search, shown

    missing = [p for p in golden.must_include if search(p, answer) is False]
    forbidden = [p for p in golden.must_not_include if search(p, answer)]
    parts = ([f"missing {', '.join(shown(p) for p in missing)}"] if missing else []) + \
        ([f"contains forbidden {', '.join(shown(p) for p in forbidden)}"] if forbidden else [])
    return "; ".join(parts) or "failed"


def mark_unstable(cases: list[AnswerCase]) -> list[str]:
    """Write each case's question pass rate and unstable flag (the per-question records compare reads);
    returns the unstable `mode:id` keys."""
    by_key = {q.key: q for q in questions_from_cases(cases)}
    for i, c in enumerate(cases):
        q = by_key[f"{c.mode}:{c.id}"]
        cases[i] = c.model_copy(update={"pass_rate": q.passed, "unstable": q.unstable})
    return sorted(k for k, q in by_key.items() if q.unstable)


def mode_metrics(cases: list[AnswerCase], mode: str) -> dict[str, float | None]:
    """Means over this mode's questions, each question's repeats averaged first (an unstable question counts at
    its pass rate; how many flip is the mode's instability)."""
    questions = [q for q in questions_from_cases(cases) if q.mode == mode]
    return means(questions, mode_metric_names(mode))


def mode_metric_names(mode: str) -> list[str]:
    return [f"{mode}.{m}" for m in (*CASE_METRICS, *QUESTION_METRICS)]


def attack_rates(cases: list[AnswerCase], mock_cases: list[AnswerCase]) -> list[AttackRate]:
    """Each attack family's success rate per mode, beside the mock's on the same prompts."""
    mock = {(r.mode, r.family): r.rate for r in family_rates(probes(mock_cases))}
    return [AttackRate(**asdict(r), mock=mock.get((r.mode, r.family))) for r in family_rates(probes(cases))]


ATTACK = MetricName(None, ATTACK_SPEC.family)


def probes(cases: list[AnswerCase]) -> list[Probe]:
    """The cases of attack goldens (the others carry no attack and are not measured)."""
    return [Probe(c.mode, c.attack.family, c.metrics.get(ATTACK), exposed(c.injected, c.attack.documents))
            for c in cases if c.attack is not None]


# Upstream NOMAD's triage rule, kept at its numbers so the advice reads the same on both sides.
ORACLE_LOW = 0.6       # below: the model fails even with the right passages
RETRIEVAL_COST = 0.15  # above (oracle − e2e): good context exists but retrieval does not deliver it


def decomposition(metrics: dict[str, float | None]) -> Decomposition:
    """Where the points went: the model itself, retrieval, or RAG not helping at all."""
    o, e, n = (metrics.get(f"{m}.correctness") for m in MODES)
    return Decomposition(oracle=o, e2e=e, noretrieval=n, retrieval_gap=None if o is None or e is None else o - e,
                         rag_lift=None if e is None or n is None else e - n, diagnosis=triage(o, e, n))


def triage(oracle: float | None, e2e: float | None, noretrieval: float | None) -> list[str]:
    """The advice after the decomposition, by upstream's rule: one verdict on model versus retrieval (the first
    that applies), then a warning when retrieval adds nothing over the bare model."""
    notes = []
    if oracle is not None and e2e is not None:
        if oracle < ORACLE_LOW:
            notes.append(f"oracle {oracle:.3f} < {ORACLE_LOW}: the model falls short even with the right passages, "
                         "so retrieval work will not fix it; try a larger model")
        elif oracle - e2e > RETRIEVAL_COST:
            notes.append(f"retrieval cost {oracle - e2e:.3f} > {RETRIEVAL_COST} (oracle − e2e): the model can use "
                         "good context but is not given it; work on retrieval")
        else:
            notes.append("model and retrieval both hold up on this corpus (oracle ≥ "
                         f"{ORACLE_LOW}, retrieval cost ≤ {RETRIEVAL_COST})")
    if e2e is not None and noretrieval is not None and e2e <= noretrieval:
        notes.append(f"RAG adds nothing: e2e {e2e:.3f} ≤ noretrieval {noretrieval:.3f}; check that the retrieved "
                     "passages reach the prompt")
    return notes


def _prompt_tokens(c: AnswerCase) -> float | None:
    v = c.estimated_prompt_tokens  # the estimate the context budget was planned with, as upstream's is
    return None if v is None else float(v)


def _answer_length(c: AnswerCase) -> float | None:
    return float(len(c.answer))


SIZES: tuple[tuple[str, Callable[[AnswerCase], float | None]], ...] = (  # upstream's names
    ("meanPromptTokens", _prompt_tokens), ("meanAnswerLength", _answer_length))


def sizes(cases: list[AnswerCase], resamples: int, seed: int) -> dict[str, dict[str, SizeSummary]]:
    """Per mode, each size's mean and standard deviation over the answers, with its interval over questions."""
    from statistics import fmean, pstdev

    from nomad_eval.core.stats import mean_interval

    out: dict[str, dict[str, SizeSummary]] = {}
    for mode in dict.fromkeys(c.mode for c in cases):
        for name, value in SIZES:
            by_question: dict[str, list[float]] = {}
            for c in cases:
                v = value(c) if c.mode == mode else None
                if v is not None:
                    by_question.setdefault(c.id, []).append(v)
            values = [v for vs in by_question.values() for v in vs]
            if not values:
                continue
            iv = mean_interval([fmean(vs) for vs in by_question.values()], resamples=resamples, seed=seed)
            out.setdefault(mode, {})[name] = SizeSummary(
                mean=fmean(values), stddev=pstdev(values), n=len(values), questions=len(by_question),
                low=None if iv is None else iv.low, high=None if iv is None else iv.high)
    return out


def relevant_rank(case: AnswerCase) -> int | None:
    """1-based position of the first injected passage from a relevant document, None when none was injected."""
    rel = set(case.relevant_doc_ids)
    for i, chunk_id in enumerate(case.injected, 1):
        if chunk_id.split("#")[0] in rel:
            return i
    return None


def position_analysis(cases: list[AnswerCase]) -> RankAnalysis:
    rows = [(i, c) for i, c in enumerate(cases) if c.mode == "e2e" and not c.expect_refusal and not c.unstable]
    by_rank: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    ignored = 0
    injected = 0
    for i, c in rows:
        rank = relevant_rank(c)
        by_rank[str(rank) if rank is not None else "not injected"][c.id].append(c.metrics[CORRECTNESS])
        if rank is not None:
            injected += 1
            if c.metrics[CORRECTNESS] == 0.0:
                ignored += 1
                cases[i] = c.model_copy(update={"retrieved_but_ignored": True})
    table = {k: rank_row(v) for k, v in
             sorted(by_rank.items(), key=lambda kv: (kv[0] == "not injected", kv[0].zfill(4)))}
    recall = injected / len(rows) if rows else None
    correct = mean(c.metrics[CORRECTNESS] for _, c in rows)
    return RankAnalysis(
        by_rank=table, context_recall=recall, retrieved_but_ignored_rate=ignored / injected if injected else None,
        # High recall with low correctness: the model had the answer in front of it and did not use it.
        retrieved_but_ignored=bool(recall is not None and correct is not None and recall >= 0.8 and correct < 0.5))


def rank_row(by_question: dict[str, list[float | None]]) -> RankRow:
    """One rank's correctness over its questions (each one's repeats averaged first: repeats are not new questions),
    n and a 95% interval: Wilson's for 0/1 values, a bootstrap over questions where a question's repeats disagree."""
    values = [v for v in (mean(r) for r in by_question.values()) if v is not None]
    row = RankRow(n=len(values), cases=sum(len(r) for r in by_question.values()), correctness=mean(values))
    if not values:
        return row
    from nomad_eval.core.stats import Interval, mean_interval
    from nomad_eval.core.summary import wilson_interval

    iv: Interval | None
    if all(v in (0.0, 1.0) for v in values):
        iv = wilson_interval(int(sum(values)), len(values))
    else:
        iv, row.method = mean_interval(values), "bootstrap"
    if iv is not None:
        row.low, row.high = iv.low, iv.high
    return row


def repeat_seed(seed: int, repeat: int) -> int:
    """A repeat's seed: `seed` itself for the first answer, a hash of (seed, repeat) for the others. `seed + repeat`
    made seed=101 repeat seed=100's draws one repeat later, so "fresh draws" were not fresh; with the hash, another
    `seed` gives other draws for every repeat."""
    if repeat == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"{seed}/{repeat}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def repeat_options(options: ChatOptions, repeat: int) -> ChatOptions:
    """A repeat's options: its own seed (repeat_seed), so sampled repeats are independent and reproducible."""
    return ChatOptions(options.temperature, repeat_seed(options.seed, repeat), options.max_tokens)


def _known_to_vary(chat: CachedChat, p: Plan, options: ChatOptions, repeats: int) -> bool:
    """The response cache holds two different answers of this backend to this prompt, from two of its repeats."""
    texts = {hit.text for r in range(repeats) if (hit := chat.cached(p.messages, repeat_options(options, r), r))}
    return len(texts) > 1


def repeats_for(config: RunConfig, chat: CachedChat, options: ChatOptions, plans: list[Plan]) -> tuple[int, str]:
    """How many answers each prompt gets, and why. `repeats=N` asks N. Left null, greedy decoding (temperature 0)
    asks once, since a repeat of the same prompt would return the same answer, unless this backend is known to
    vary: the response cache already holds differing answers of it to one of these prompts from earlier repeats
    (a server that batches requests can break greedy ties differently). Sampled answers always get
    `sample_repeats`."""
    if config.repeats is not None:
        n = max(1, int(config.repeats))
        return n, f"repeats={n} as set"
    n = int(config.sample_repeats)
    if options.temperature > 0:
        return n, f"temperature {options.temperature:g} samples: sample_repeats={n} answers per prompt"
    varied = sum(_known_to_vary(chat, p, options, n) for p in plans)
    if varied:
        return n, (f"temperature 0, but this backend is known to vary: its cached answers differ between repeats "
                   f"for {varied} of {len(plans)} prompts, so sample_repeats={n}")
    return 1, ("temperature 0 and the backend is not known to vary (no cached answer of it differs between "
               "repeats): one answer per prompt; repeats=N asks N")
