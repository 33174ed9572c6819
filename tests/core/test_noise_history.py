"""Noise from question history: a question asked once on both sides pools its earlier draws (earlier runs of the same
golden and system) with its two current ones, so the gate measures the noise it could not, and says where from;
with no history the verdict still cannot tell, and a backend deterministic by construction keeps its rule."""

from __future__ import annotations

import math
from typing import Any

import pytest

from nomad_eval.core.noise import History, delta_noise
from nomad_eval.core.questions import Question, means, questions_from_cases
from nomad_eval.gate.compare import compare_questions
from tests.written import records

GATED = ["e2e.correctness", "e2e.pass_rate"]


def cases(passes: dict[str, list[bool]]) -> list[dict[str, Any]]:
    return [{"id": qid, "mode": "e2e", "repeat": r, "relevant_doc_ids": [qid], "passed": p,
             "metrics": {"correctness": 1.0 if p else 0.0}} for qid, ps in passes.items() for r, p in enumerate(ps)]


def questions(passes: dict[str, list[bool]]) -> list[Question]:
    return questions_from_cases(records(cases(passes)))


def history(*runs: dict[str, list[bool]]) -> History:
    """Earlier runs, each a question -> its draws."""
    out: dict[str, list[Question]] = {}
    for run in runs:
        for q in questions(run):
            out.setdefault(q.key, []).append(q)
    return History(out, len(runs))


def pairs(base: dict[str, list[bool]], run: dict[str, list[bool]]) -> list[tuple[Question, Question]]:
    return list(zip(questions(base), questions(run), strict=True))


def test_history_draws_are_pooled_with_the_current_ones_into_the_variance_and_its_degrees_of_freedom() -> None:
    earlier = history({"a": [True], "b": [True]}, {"a": [False], "b": [True]})
    noise = delta_noise(pairs({"a": [True], "b": [True]}, {"a": [False], "b": [True]}), "e2e.correctness",
                        deterministic=False, history=earlier)
    # a: draws T F T F, mean 1/2, variance 1/4 * 4/3 a draw, times 1/1 + 1/1 for the delta; b: all right, none.
    assert noise.se == pytest.approx(math.sqrt(2 / 3) / 2)
    assert noise.df == pytest.approx(3.0)  # four draws of a, less their mean
    assert noise.step == pytest.approx(1 / 2)
    assert noise.source == "from question history (2 earlier run(s), 4 draws of 2 question(s))"


def test_no_history_or_none_of_these_questions_cannot_tell_and_deterministic_backends_keep_their_rule() -> None:
    p = pairs({"a": [True], "b": [True]}, {"a": [False], "b": [True]})
    for earlier in (None, History(), history({"other": [True]})):
        noise = delta_noise(p, "e2e.correctness", deterministic=False, history=earlier)
        assert noise.se is None and noise.source == "not measured (repeats = 1)"
    exact = delta_noise(p, "e2e.correctness", deterministic=True, history=history({"a": [False], "b": [True]}))
    assert exact.se == 0.0 and exact.source.startswith("deterministic by construction")


def test_a_question_a_side_repeated_keeps_that_sides_noise_and_one_without_history_uses_its_two_draws() -> None:
    earlier = history({"a": [False], "b": [True], "c": [True]})
    p = pairs({"a": [True, False, True], "b": [True], "c": [True]}, {"a": [True], "b": [False], "c": [True]})
    noise = delta_noise(p, "e2e.correctness", deterministic=False, history=earlier)
    assert noise.source == ("from the baseline's repeats (3; the run has 1); asked once a side: from question "
                            "history (1 earlier run(s), 2 draws of 2 question(s))")
    bare = delta_noise(pairs({"a": [True], "b": [True]}, {"a": [False], "b": [True]}), "e2e.correctness",
                       deterministic=False, history=history({"b": [False]}))
    # a has no history: its two draws T F, mean 1/2, variance 1/4 * 2 a draw, times 2 for the delta.
    assert bare.se is not None and bare.se == pytest.approx(math.sqrt(1.0 + 2 / 3) / 2)
    assert bare.source.endswith("; 1 question(s) without history from their two draws")


def test_a_history_that_never_varies_leaves_the_exact_rule_a_flip_did_flip() -> None:
    stable = {f"q{i}": [True] for i in range(20)}
    earlier = history(stable, stable)
    run = {f"q{i}": [i >= 3] for i in range(20)}
    v = compare_questions(*(questions(x) for x in (stable, run)), GATED, history=earlier,
                          base_metrics=means(questions(stable), GATED), run_metrics=means(questions(run), GATED))
    m = next(m for m in v.metrics if m.name == "e2e.correctness")
    assert m.noise == 0.0 and "every question's repeats agree" in m.noise_source and v.outcome == "regression"


def test_compare_at_one_repeat_with_history_gives_a_verdict_that_names_it_not_cannot_tell() -> None:
    flaky = [f"f{i}" for i in range(12)]
    stable = {f"s{i}": [True] for i in range(28)}
    base = {**{q: [i % 2 == 0] for i, q in enumerate(flaky)}, **stable}
    run = {**{q: [i % 3 == 0] for i, q in enumerate(flaky)}, **stable}  # 6 pass before, 4 now: chance
    earlier = history({**{q: [i % 2 == 1] for i, q in enumerate(flaky)}, **stable},
                      {**{q: [i < 6] for i, q in enumerate(flaky)}, **stable})
    bq, rq = questions(base), questions(run)
    kw: dict[str, Any] = {"base_metrics": means(bq, GATED), "run_metrics": means(rq, GATED)}
    assert compare_questions(bq, rq, GATED, **kw).outcome == "not measured"
    v = compare_questions(bq, rq, GATED, history=earlier, **kw)
    m = next(m for m in v.metrics if m.name == "e2e.correctness")
    assert v.exit_code == 0 and m.outcome == "within tolerance" and m.noise is not None and m.noise > 0
    assert "from question history (2 earlier run(s), 80 draws of 40 question(s))" in m.reason
