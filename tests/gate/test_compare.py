"""The gate's rules on per-question records: run-to-run noise decides, question sampling is shown beside it,
null never passes, goldens added or changed are listed and left ungated, missing questions fail."""

from __future__ import annotations

import random
from typing import Any

from nomad_eval.core.power import detectable_change
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.gate.compare import compare_questions
from tests.written import records

Case = dict[str, Any]


def retrieval_cases(recalls: list[float | None], docs: list[str] | None = None) -> list[Case]:
    return [{"id": f"q{i}", "relevant_doc_ids": [docs[i] if docs else f"d{i}"], "passed": r == 1.0,
             "metrics": {"recall@5": r, "mrr@5": r}} for i, r in enumerate(recalls)]


def means(cases: list[Case]) -> dict[str, float | None]:
    def mean(name: str) -> float | None:
        xs = [c["metrics"][name] for c in cases if c["metrics"][name] is not None]
        return sum(xs) / len(xs) if xs else None
    return {"recall@5": mean("recall@5"), "mrr@5": mean("mrr@5")}


def verdict(base: list[Case], run: list[Case], gated: tuple[str, ...] = ("recall@5", "mrr@5"),
            run_metrics: dict[str, float | None] | None = None, **kw: Any) -> Any:
    return compare_questions(questions_from_cases(records(base)), questions_from_cases(records(run)), list(gated),
                             base_metrics=means(base), run_metrics=means(run) if run_metrics is None else run_metrics,
                             **kw)


def gen_cases(passes: dict[str, list[bool]], mode: str = "e2e") -> list[Case]:
    return [{"id": qid, "mode": mode, "repeat": r, "relevant_doc_ids": ["d"], "passed": p,
             "metrics": {"correctness": 1.0 if p else 0.0}} for qid, ps in passes.items() for r, p in enumerate(ps)]


def gen_verdict(base: list[Case], run: list[Case], gated: list[str], **kw: Any) -> Any:
    bq, rq = questions_from_cases(records(base)), questions_from_cases(records(run))
    names = {n for q in bq + rq for n in q.values}

    def avg(qs: Any, n: str) -> float | None:
        xs = [q.values[n] for q in qs if q.values.get(n) is not None]
        return sum(xs) / len(xs) if xs else None
    return compare_questions(bq, rq, gated, base_metrics={n: avg(bq, n) for n in names},
                             run_metrics={n: avg(rq, n) for n in names}, **kw)


def test_an_identical_run_passes_with_zero_width_intervals() -> None:
    rng = random.Random(1)
    base = retrieval_cases([rng.choice([0.0, 0.5, 1.0, 1.0]) for _ in range(120)])
    v = verdict(base, [dict(c) for c in base])
    assert v.exit_code == 0 and v.outcome == "pass" and v.common == 120
    for m in v.metrics:
        assert m.delta == 0.0 and m.interval is not None and m.interval.low == m.interval.high == 0.0
        assert m.outcome == "within tolerance" and m.p_adjusted == 1.0 and m.noise == 0.0


def test_a_null_or_missing_metric_in_the_run_fails_the_gate() -> None:
    base = retrieval_cases([1.0] * 50)
    nulled = verdict(base, base, run_metrics={"recall@5": None, "mrr@5": 1.0})
    assert nulled.exit_code == 1 and nulled.outcome == "not measured"
    (bad,) = nulled.unmeasured
    assert bad.name == "recall@5" and "null in the run" in bad.reason
    removed = verdict(base, base, run_metrics={"mrr@5": 1.0})
    assert removed.exit_code == 1 and "missing from the run" in removed.unmeasured[0].reason


def test_a_deterministic_drop_past_the_tolerance_fails_even_where_question_sampling_cannot_tell() -> None:
    # 14 questions, 4 flip from pass to fail: question sampling cannot generalise it (Holm p > 0.05 here), but
    # retrieval is deterministic: those four questions did lose their document.
    base = retrieval_cases([1.0] * 14)
    run = retrieval_cases([0.0] * 4 + [1.0] * 10)
    v = verdict(base, run)
    assert v.exit_code == 1 and v.outcome == "regression"
    rec = next(m for m in v.metrics if m.name == "recall@5")
    assert rec.outcome == "regression" and rec.noise == 0.0 and rec.worse == ("q0", "q1", "q2", "q3")
    assert rec.p_adjusted is not None and rec.p_adjusted > 0.05  # shown beside, not deciding
    assert any("too small to tell a tolerance-sized change in general" in w for w in v.warnings)


def test_one_flipped_question_of_219_passes_and_five_fail() -> None:
    base = retrieval_cases([1.0] * 219)
    one = verdict(base, retrieval_cases([0.0] + [1.0] * 218), gated=("recall@5",))
    assert one.exit_code == 0 and one.metrics[0].outcome == "within tolerance"
    five = verdict(base, retrieval_cases([0.0] * 5 + [1.0] * 214), gated=("recall@5",))
    assert five.exit_code == 1 and five.metrics[0].outcome == "regression"


def test_strict_never_fails_an_improvement_and_fails_an_untellable_drop() -> None:
    base = retrieval_cases([1.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    better = retrieval_cases([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    assert verdict(base, better, gated=("recall@5",), strict=True).exit_code == 0
    # lower is better: nonEmptyRateOnRefusal 1.0 -> 0.8 is an improvement
    refusal = [{"id": f"r{i}", "relevant_doc_ids": [], "passed": True, "metrics": {"nonEmptyRateOnRefusal": v}}
               for i, v in enumerate([1.0] * 5)]
    improved = [dict(c, metrics={"nonEmptyRateOnRefusal": 0.0 if i == 0 else 1.0}) for i, c in enumerate(refusal)]
    v = compare_questions(questions_from_cases(records(refusal)), questions_from_cases(records(improved)),
                          ["nonEmptyRateOnRefusal"],
                          base_metrics={"nonEmptyRateOnRefusal": 1.0}, run_metrics={"nonEmptyRateOnRefusal": 0.8},
                          strict=True)
    assert v.exit_code == 0 and v.metrics[0].reason.startswith("better")
    # A small drop inside the tolerance that the suite is too small to judge in general: strict fails it.
    many = retrieval_cases([1.0] * 60)
    drop = retrieval_cases([0.0] + [1.0] * 59)  # -0.0167, inside ±0.02
    assert verdict(many, drop, gated=("recall@5",)).exit_code == 0
    strict = verdict(many, drop, gated=("recall@5",), strict=True)
    assert strict.exit_code == 1 and strict.metrics[0].outcome == "too small to tell"


def test_answers_that_turn_flaky_fail_on_instability() -> None:
    """25 of 100 always-passing questions start failing half their repeats: instability 0 -> 0.25."""
    base = gen_cases({f"q{i}": [True] * 4 for i in range(100)})
    run = gen_cases({f"q{i}": [True, False, True, False] if i < 25 else [True] * 4 for i in range(100)})
    v = gen_verdict(base, run, ["e2e.correctness", "e2e.instability"])
    inst = next(m for m in v.metrics if m.name == "e2e.instability")
    assert inst.baseline == 0.0 and inst.current == 0.25 and inst.outcome == "regression"
    assert len(inst.worse) == 25 and v.exit_code == 1
    assert v.common == 100  # nobody dropped: unstable questions stay in both sides by default
    upstream = gen_verdict(base, run, ["e2e.correctness"], exclude_unstable=True)
    assert upstream.common == 75 and upstream.questions.unstable[0] == "e2e:q0"


def test_run_to_run_noise_from_repeats_can_explain_a_drop() -> None:
    # Every question passes 2 of 4 repeats on both sides; the run's mean is lower by 0.03 by chance of which
    # repeats passed: past the tolerance, but inside what run-to-run noise explains.
    base = gen_cases({f"q{i}": [True, True, False, False] for i in range(30)})
    run = gen_cases({f"q{i}": ([True, False, False, False] if i < 4 else [True, True, False, False])
                     for i in range(30)})
    v = gen_verdict(base, run, ["e2e.correctness"])
    (m,) = v.metrics
    assert m.noise is not None and m.noise > 0.05 and m.delta is not None and m.delta < -0.02
    assert m.outcome == "within tolerance" and "within run-to-run noise" in m.reason


def test_goldens_added_changed_and_missing() -> None:
    base = retrieval_cases([1.0] * 20)
    run = retrieval_cases([1.0] * 21)  # q20 is new
    run[3]["metrics"] = {"recall@5": 0.0, "mrr@5": 0.0}  # q3's judgement changed: its drop is not gated
    judg = {f"q{i}": "h" for i in range(21)}
    v = verdict(base, run, base_goldens={f"q{i}": "h" for i in range(20)}, run_goldens={**judg, "q3": "new"})
    assert v.questions.added == ["q20"] and v.questions.changed == ["q3"] and v.common == 19
    assert v.exit_code == 0
    # Rows removed from the run's records while its suite still holds them: not measured, named.
    cut = [c for c in run if c["id"] not in ("q5", "q6")]
    gone = verdict(base, cut, base_goldens={f"q{i}": "h" for i in range(20)}, run_goldens={**judg, "q3": "new"})
    assert gone.questions.missing == ["q5", "q6"] and gone.exit_code == 1 and gone.outcome == "not measured"


def test_questions_the_run_left_unmeasured_fail_rather_than_shrink_the_comparison() -> None:
    base = retrieval_cases([1.0] * 40)
    run = retrieval_cases([None] * 10 + [1.0] * 30)
    v = verdict(base, run, gated=("recall@5",), run_metrics={"recall@5": 1.0, "mrr@5": 1.0})
    (m,) = v.metrics
    assert v.exit_code == 1 and m.outcome == "not measured"
    assert "10 question(s) the baseline measured are null in the run" in m.reason


def test_clustering_by_document_widens_the_interval_when_questions_share_documents() -> None:
    rng = random.Random(3)
    docs = [f"doc{i // 10}" for i in range(200)]
    shift = {d: rng.choice([-1.0, 0.0, 0.0, 1.0]) for d in set(docs)}
    base = retrieval_cases([0.5] * 200, docs)
    run = retrieval_cases([0.5 + 0.5 * shift[d] for d in docs], docs)
    flat = verdict(base, run, gated=("recall@5",)).metrics[0].interval
    clustered = verdict(base, run, gated=("recall@5",), cluster=True).metrics[0].interval
    assert flat is not None and clustered is not None and clustered.width > 1.5 * flat.width


def test_the_detectable_change_is_the_suites_property() -> None:
    values = [1.0] * 200 + [0.0] * 19
    one = detectable_change(values, 4, 0.5)
    assert one is not None and 0.03 < one < 0.08
    # Holm: more gated metrics, a stricter first step, a larger detectable change.
    assert (detectable_change(values, 1, 0.5) or 0) < one
    # No spread at all still leaves a floor that shrinks with n.
    small, large = detectable_change([1.0] * 16, 4, 0.5), detectable_change([1.0] * 400, 4, 0.5)
    assert small is not None and large is not None and small > large > 0


def test_one_tolerance_for_every_metric_replaces_each_metrics_own() -> None:
    """compare.tolerance, as upstream's --tolerance: 5 of 219 questions lost (0.0228) pass at 0.05, 12 (0.0548) not."""
    base = retrieval_cases([1.0] * 219)
    five = retrieval_cases([0.0] * 5 + [1.0] * 214)
    assert verdict(base, five).exit_code == 1  # each metric's own tolerance, 0.02
    loose = verdict(base, five, tolerance=0.05)
    assert loose.exit_code == 0 and {m.tolerance for m in loose.metrics} == {"±0.05"}
    assert all(m.outcome == "within tolerance" and "inside the tolerance 0.05" in m.reason for m in loose.metrics)
    twelve = verdict(base, retrieval_cases([0.0] * 12 + [1.0] * 207), tolerance=0.05)
    assert twelve.exit_code == 1 and "worse by 0.0548 > tolerance 0.05" in twelve.metrics[0].reason


def test_a_relative_tolerance_has_a_meaningful_floor_and_prints_it() -> None:
    """prompt_token_error 0.0007 -> 0.2 passed as '±25%' (its floor was 0.25 absolute); the floor is 0.02 now."""
    name = "e2e.prompt_token_error"
    base = [{"id": f"q{i}", "mode": "e2e", "passed": True, "relevant_doc_ids": ["d"],
             "metrics": {"prompt_token_error": 0.0007}} for i in range(10)]
    run = [dict(c, metrics={"prompt_token_error": 0.2}) for c in base]
    v = compare_questions(questions_from_cases(records(base)), questions_from_cases(records(run)), [name],
                          base_metrics={name: 0.0007}, run_metrics={name: 0.2}, deterministic=True)
    (m,) = v.metrics
    assert m.outcome == "regression" and m.tolerance == "±25% (at least 0.02)"
    ok = [dict(c, metrics={"prompt_token_error": 0.015}) for c in base]
    assert compare_questions(questions_from_cases(records(base)), questions_from_cases(records(ok)), [name],
                             base_metrics={name: 0.0007}, run_metrics={name: 0.015}, deterministic=True).exit_code == 0
