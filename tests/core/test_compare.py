"""The gate's rules on per-question records: same questions on both sides, null never passes, three outcomes."""

from __future__ import annotations

import random
from typing import Any

from nomad_eval.core.compare import compare_questions
from nomad_eval.core.questions import questions_from_cases

Case = dict[str, Any]


def retrieval_cases(recalls: list[float], docs: list[str] | None = None) -> list[Case]:
    return [{"id": f"q{i}", "relevant_doc_ids": [docs[i] if docs else f"d{i}"], "passed": r == 1.0,
             "metrics": {"recall@5": r, "mrr@5": r}} for i, r in enumerate(recalls)]


def means(cases: list[Case]) -> dict[str, float | None]:
    return {"recall@5": sum(c["metrics"]["recall@5"] for c in cases) / len(cases),
            "mrr@5": sum(c["metrics"]["mrr@5"] for c in cases) / len(cases)}


def verdict(base: list[Case], run: list[Case], gated: tuple[str, ...] = ("recall@5", "mrr@5"),
            run_metrics: dict[str, float | None] | None = None, **kw: Any) -> Any:
    return compare_questions(questions_from_cases(base), questions_from_cases(run), list(gated),
                             base_metrics=means(base), run_metrics=means(run) if run_metrics is None else run_metrics,
                             **kw)


def test_an_identical_run_is_within_noise_with_zero_width_intervals() -> None:
    rng = random.Random(1)
    base = retrieval_cases([rng.choice([0.0, 0.5, 1.0, 1.0]) for _ in range(120)])
    v = verdict(base, [dict(c) for c in base])
    assert v.exit_code == 0 and v.outcome == "within noise" and v.common == 120
    for m in v.metrics:
        assert m.delta == 0.0 and m.interval is not None and m.interval.low == m.interval.high == 0.0
        assert m.outcome == "within noise" and m.p_adjusted == 1.0


def test_a_null_or_missing_metric_in_the_run_fails_the_gate() -> None:
    base = retrieval_cases([1.0] * 50)
    nulled = verdict(base, base, run_metrics={"recall@5": None, "mrr@5": 1.0})
    assert nulled.exit_code == 1
    (bad,) = nulled.regressions
    assert bad.name == "recall@5" and bad.outcome == "not measured" and "null in the run" in bad.reason
    removed = verdict(base, base, run_metrics={"mrr@5": 1.0})
    assert removed.exit_code == 1 and "missing from the run" in removed.regressions[0].reason


def test_a_clear_regression_is_significant_and_beyond_tolerance() -> None:
    base = retrieval_cases([1.0] * 200)
    run = retrieval_cases([0.0 if i % 10 == 0 else 1.0 for i in range(200)])  # -0.10
    v = verdict(base, run)
    assert v.exit_code == 1 and v.outcome == "regression"
    rec = next(m for m in v.metrics if m.name == "recall@5")
    assert rec.outcome == "regression" and rec.interval is not None and rec.interval.high < 0
    assert rec.p_adjusted is not None and rec.p_adjusted < 0.01


def test_a_small_suite_cannot_tell() -> None:
    # Six questions, one flips: the delta is -0.17, but six pairs cannot show it is not chance.
    base = retrieval_cases([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    run = retrieval_cases([1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    v = verdict(base, run, gated=("recall@5",))
    (m,) = v.metrics
    assert m.outcome == "too small to tell" and m.mde is not None and m.mde > 0.02
    assert v.exit_code == 0 and v.outcome == "too small to tell"
    strict = verdict(base, run, gated=("recall@5",), strict=True)
    assert strict.exit_code == 1


def test_unstable_questions_leave_both_sides() -> None:
    """Always-failing questions that start to flip must not raise the run's pass rate."""
    def gen(i: int, rep: int, passed: bool) -> Case:
        return {"id": f"q{i}", "mode": "e2e", "repeat": rep, "relevant_doc_ids": ["d"], "passed": passed,
                "metrics": {"correctness": 1.0 if passed else 0.0}}
    base = [gen(i, r, i < 8) for i in range(10) for r in range(3)]  # q8, q9 always fail: pass rate 0.8
    run = [gen(i, r, i < 8 or r == 0) for i in range(10) for r in range(3)]  # q8, q9 flip
    run_q = questions_from_cases(run)
    assert sum(q.unstable for q in run_q) == 2
    v = compare_questions(questions_from_cases(base), run_q, ["e2e.pass_rate"],
                          base_metrics={"e2e.pass_rate": 0.8}, run_metrics={"e2e.pass_rate": 1.0})
    assert v.unstable == ["e2e:q8", "e2e:q9"] and v.common == 8
    (m,) = v.metrics
    assert m.baseline == m.current == 1.0 and m.delta == 0.0  # the same 8 questions on both sides


def test_every_question_unstable_is_refused_not_passed() -> None:
    base = [{"id": "q1", "mode": "e2e", "repeat": r, "passed": r == 0, "metrics": {"correctness": 1.0 - r % 2}}
            for r in range(3)]
    v = compare_questions(questions_from_cases(base), questions_from_cases(base), ["e2e.pass_rate"],
                          base_metrics={"e2e.pass_rate": None}, run_metrics={"e2e.pass_rate": None})
    assert v.exit_code == 2 and "no questions to compare" in v.refused[0]


def test_repeats_are_averaged_per_question_before_resampling() -> None:
    cases = [{"id": f"q{i}", "mode": "e2e", "repeat": r, "passed": True, "metrics": {"correctness": 1.0}}
             for i in range(5) for r in range(4)]
    qs = questions_from_cases(cases)
    assert len(qs) == 5 and all(q.repeats == 4 and q.values["e2e.pass_rate"] == 1.0 for q in qs)


def test_clustering_by_document_widens_the_interval_when_questions_share_documents() -> None:
    rng = random.Random(3)
    docs = [f"doc{i // 10}" for i in range(200)]
    shift = {d: rng.choice([-1.0, 0.0, 0.0, 1.0]) for d in set(docs)}
    base = retrieval_cases([0.5] * 200, docs)
    run = retrieval_cases([0.5 + 0.5 * shift[d] for d in docs], docs)
    flat = verdict(base, run, gated=("recall@5",)).metrics[0].interval
    clustered = verdict(base, run, gated=("recall@5",), cluster=True).metrics[0].interval
    assert flat is not None and clustered is not None and clustered.width > 1.5 * flat.width


def test_questions_the_run_left_unmeasured_fail_rather_than_shrink_the_comparison() -> None:
    base = retrieval_cases([1.0] * 40)
    run = retrieval_cases([1.0] * 40)
    for c in run[:10]:
        c["metrics"]["recall@5"] = None  # e.g. a pattern that ran past its time limit: not judged
    v = verdict(base, run, gated=("recall@5",), run_metrics={"recall@5": 1.0, "mrr@5": 1.0})
    (m,) = v.metrics
    assert v.exit_code == 1 and m.outcome == "not measured"
    assert "10 question(s) the baseline measured are null in the run" in m.reason
