"""Run-to-run noise on answers that vary: measured from the repeats of either side, never taken for zero when no
side repeated a question, instability gated with its own noise, and one family for every metric that varies."""

from __future__ import annotations

from typing import Any

from nomad_eval.core.questions import means, questions_from_cases
from nomad_eval.gate.compare import compare_questions
from tests.written import records

Case = dict[str, Any]
GATED = ["e2e.correctness", "e2e.pass_rate", "e2e.instability"]


def cases(passes: dict[str, list[bool]]) -> list[Case]:
    return [{"id": qid, "mode": "e2e", "repeat": r, "relevant_doc_ids": [qid], "passed": p,
             "metrics": {"correctness": 1.0 if p else 0.0}} for qid, ps in passes.items() for r, p in enumerate(ps)]


def verdict(base: list[Case], run: list[Case], gated: list[str] = GATED, **kw: Any) -> Any:
    bq, rq = questions_from_cases(records(base)), questions_from_cases(records(run))
    return compare_questions(bq, rq, gated, base_metrics=means(bq, gated), run_metrics=means(rq, gated), **kw)


def row(v: Any, name: str) -> Any:
    return next(m for m in v.metrics if m.name == name)


def test_one_repeat_on_both_sides_cannot_tell_flips_from_noise_unless_deterministic_by_construction() -> None:
    base = cases({f"q{i}": [True] for i in range(40)})
    run = cases({f"q{i}": [i >= 4] for i in range(40)})  # four flips: 0.1 worse
    v = verdict(base, run, ["e2e.correctness", "e2e.pass_rate"])
    m = row(v, "e2e.correctness")
    assert v.outcome == "not measured" and v.exit_code == 1 and not v.regressions
    assert m.noise is None and m.reason.startswith("cannot tell: run-to-run noise not measured (repeats = 1)")
    assert "next: repeats=" in m.reason and m.worse == ("e2e:q0", "e2e:q1", "e2e:q2", "e2e:q3")
    # The mock, or answers replayed from the response cache: the flips did flip.
    exact = verdict(base, run, ["e2e.correctness", "e2e.pass_rate"], deterministic=True)
    assert exact.outcome == "regression" and row(exact, "e2e.correctness").noise == 0.0
    # Nothing worse past the tolerance: nothing to tell, a pass whatever the noise.
    assert verdict(base, base, ["e2e.correctness", "e2e.pass_rate"]).outcome == "pass"


def test_a_run_with_one_repeat_takes_its_noise_from_the_baselines_repeats_and_says_so() -> None:
    flaky = {f"q{i}": [True, False, True] for i in range(15)}
    base = cases({**flaky, **{f"s{i}": [True] * 3 for i in range(45)}})
    run = cases({**{f"q{i}": [i % 2 == 0] for i in range(15)}, **{f"s{i}": [True] for i in range(45)}})
    v = verdict(base, run)
    m = row(v, "e2e.correctness")
    assert m.noise is not None and m.noise > 0 and "from the baseline's repeats (3; the run has 1)" in m.reason
    assert m.outcome == "within tolerance" and "within run-to-run noise" in m.reason
    # Instability needs repeats on both sides: with one in the run it is said, not gated and not failed.
    assert not row(v, "e2e.instability").gated and any("instability needs 2+ repeats" in w for w in v.warnings)
    assert v.exit_code == 0


def test_instability_is_gated_with_its_own_noise_not_a_bare_tolerance() -> None:
    """15 of 60 questions pass half their draws on both sides; the run happens to see 4 more of them disagree
    (instability +0.067, past ±0.05): what 15 such questions do between two runs (about ±0.04 a side)."""
    flaky_b = {f"q{i}": [True, False, True] if i < 10 else [True, True, True] for i in range(15)}
    flaky_r = {f"q{i}": [True, False, True] if i < 14 else [False, False, False] for i in range(15)}
    stable = {f"s{i}": [True] * 3 for i in range(45)}
    v = verdict(cases({**flaky_b, **stable}), cases({**flaky_r, **stable}))
    inst = row(v, "e2e.instability")
    assert inst.delta is not None and inst.delta > 0.05 and inst.noise is not None and inst.noise > 0.03
    assert inst.outcome == "within tolerance" and v.exit_code == 0
    # Questions that turn flaky for real stand out from that noise.
    turned = {f"s{i}": [True, False, False] if i < 12 else [True] * 3 for i in range(45)}
    worse = verdict(cases({**flaky_b, **stable}), cases({**flaky_b, **turned}))
    assert row(worse, "e2e.instability").outcome == "regression" and worse.exit_code == 1


def test_the_family_of_varying_metrics_is_corrected_together_and_deterministic_ones_keep_the_exact_rule() -> None:
    flaky = {f"q{i}": [True, False, True, False] for i in range(20)}
    base = cases({**flaky, **{f"s{i}": [True] * 4 for i in range(40)}})
    run = cases({**flaky, **{f"s{i}": [i >= 8] * 4 for i in range(40)}})  # eight always-right questions lost
    v = verdict(base, run)
    m = row(v, "e2e.correctness")
    assert "over 4 varying test(s)" in m.reason and m.noise_p is not None
    assert m.outcome == "regression" and set(m.worse) == {f"e2e:s{i}" for i in range(8)}
    # No question varies within its repeats: the exact rule, a drop of 3 in 60 past ±0.02 fails.
    steady = cases({f"s{i}": [True] * 2 for i in range(60)})
    lost = cases({f"s{i}": [i >= 2] * 2 for i in range(60)})
    d = row(verdict(steady, lost), "e2e.correctness")
    assert d.outcome == "regression" and d.noise == 0.0 and "deterministic" in d.reason


def test_plan_gives_the_repeats_that_find_a_stated_drop_and_the_gates_own_80_percent_point() -> None:
    from nomad_eval.core.noise import gate_drop_at, gate_power, planned_se, repeats_for_drop

    flaky = {f"q{i}": [True, False, True, False] for i in range(15)}
    qs = questions_from_cases(records(cases({**flaky, **{f"s{i}": [True] * 4 for i in range(45)}})))
    name = "e2e.correctness"
    big, small = repeats_for_drop(qs, name, 0.1, 0.02, 4), repeats_for_drop(qs, name, 0.04, 0.02, 4)
    assert big is not None and small is not None and big < small
    se = planned_se(qs, name, big)
    assert se is not None and gate_power(se, 0.1, 0.02, 4) >= 0.8 > gate_power(se, 0.04, 0.02, 4)
    at_four = gate_drop_at(qs, name, 0.02, 4, 4)
    assert at_four is not None and 0.02 < at_four < 0.1
    # No repeats in the baseline: nothing says how the answers vary.
    once = questions_from_cases(records(cases({f"q{i}": [True] for i in range(20)})))
    assert repeats_for_drop(once, name, 0.1, 0.02, 4) is None and gate_drop_at(once, name, 0.02, 4, 1) is None


def test_steady_questions_made_flaky_are_named_by_their_fresh_failures() -> None:
    # Fifteen questions that always varied hide six steady ones made flaky from the mean's noise test; their
    # failures on questions the baseline passed eight times out of eight do not hide.
    flaky = {f"q{i}": [True, False] * 4 for i in range(15)}
    base = cases({**flaky, **{f"s{i}": [True] * 8 for i in range(45)}})
    run = cases({**{k: [True, False] for k in flaky}, **{f"s{i}": [True, i >= 6] for i in range(45)}})
    m = row(verdict(base, run), "e2e.pass_rate")
    assert m.fresh is not None and m.fresh.failures == 6 and m.fresh.n == 60 and m.fresh.draws == (8, 2)
    assert m.fresh.p is not None and m.fresh.p < 1e-3
    assert m.outcome == "regression" and "6 fresh failure(s) on 6 of n=60 question(s)" in m.reason
    # The same run without the change: no fresh failure, and the pass rate passes.
    same = row(verdict(base, cases({**{k: [True, False] for k in flaky},
                                    **{f"s{i}": [True, True] for i in range(45)}})), "e2e.pass_rate")
    assert same.fresh is not None and same.fresh.failures == 0 and same.outcome == "within tolerance"
