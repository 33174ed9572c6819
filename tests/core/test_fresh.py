"""Fresh failures (core/fresh.py): the exact within-question permutation test of the run's failures on questions
whose baseline passed every draw."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from nomad_eval.core.fresh import fresh_failures


def _brute_p(questions: list[tuple[list[bool], list[bool]]]) -> float:
    """The p-value by placing every question's failures on every possible set of positions, all equally likely."""
    laws = []
    for b, r in questions:
        draws = [*b, *r]
        fails = sum(1 for x in draws if not x)
        counts = []
        for spots in combinations(range(len(draws)), fails):
            on_base = any(s < len(b) for s in spots)
            counts.append(0 if on_base else fails)
        laws.append(counts)
    seen = sum(sum(1 for x in r if not x) for b, r in questions if all(b))
    # The questions are independent: enumerate the product of their placements.
    grids = np.meshgrid(*[np.array(c) for c in laws], indexing="ij")
    sums = sum(g for g in grids)
    return int((sums >= seen).sum()) / sums.size


def test_the_exact_p_is_the_share_of_placements_that_show_as_many_fresh_failures() -> None:
    questions = [([True] * 4, [True, False]), ([True] * 4, [False, False]), ([True, False, True, True], [True, False]),
                 ([True] * 4, [True, True]), ([False, True, True, True], [True, True])]
    got = fresh_failures([(f"q{i}", b, r) for i, (b, r) in enumerate(questions)])
    assert got.failures == 3 and got.questions == ("q0", "q1") and got.draws == (4, 2) and got.n == 5
    assert got.p is not None and abs(got.p - _brute_p(questions)) < 1e-12


def test_only_the_first_draws_every_question_has_take_part() -> None:
    # The second question was asked again after its failure: its later draws are not placed at random.
    got = fresh_failures([("a", [True] * 4, [True, True]), ("b", [True] * 6, [True, False, False, False, True])])
    assert got.draws == (4, 2) and got.failures == 1


def test_an_unchanged_system_of_steady_looking_questions_is_flagged_at_most_alpha_of_the_time() -> None:
    # Questions right nine times in ten often pass all their baseline draws by luck: the test must not take
    # their run failures for fresh ones more often than it says.
    rng = np.random.default_rng(7)
    p = np.r_[np.full(20, 0.9), np.full(10, 0.5), np.ones(30)]
    flagged = 0
    for _ in range(2000):
        pairs = [(f"q{i}", list(rng.random(4) < pi), list(rng.random(2) < pi)) for i, pi in enumerate(p)]
        got = fresh_failures(pairs)
        flagged += got.p is not None and got.p < 0.05
    assert flagged / 2000 <= 0.05 + 3 * (0.05 * 0.95 / 2000) ** 0.5


def test_steady_questions_made_flaky_stand_out() -> None:
    rng = np.random.default_rng(3)
    p_base = np.r_[np.full(15, 0.5), np.ones(45)]
    p_run = p_base.copy()
    p_run[15:21] = 0.5  # six steady questions made flaky
    found = sum(
        (got := fresh_failures([(f"q{i}", list(rng.random(8) < pb), list(rng.random(2) < pr))
                                for i, (pb, pr) in enumerate(zip(p_base, p_run, strict=True))])).p is not None
        and got.p < 0.01 for _ in range(300))
    assert found / 300 >= 0.8


def test_no_draws_on_a_side_is_no_test() -> None:
    assert fresh_failures([("a", [], [True]), ("b", [True], [])]).p is None
