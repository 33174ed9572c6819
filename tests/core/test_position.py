"""The position curve's kernel: orderings, positions, per-position intervals and the paired comparison."""

from __future__ import annotations

import pytest

from nomad_eval.core.position import curve, paired_difference, place, point, positions_for


def test_place_moves_only_the_relevant_passage() -> None:
    ds = ["a", "b", "c", "d"]
    orders = [place("R", ds, p) for p in range(1, 6)]
    assert orders[0] == ["R", "a", "b", "c", "d"]
    assert orders[2] == ["a", "b", "R", "c", "d"]
    assert orders[4] == ["a", "b", "c", "d", "R"]
    for p, o in enumerate(orders, 1):
        assert sorted(o) == sorted(["R", *ds]) and o.index("R") == p - 1
        assert [x for x in o if x != "R"] == ds  # the distractors keep their own order
    with pytest.raises(ValueError, match="outside 1..5"):
        place("R", ds, 6)
    with pytest.raises(ValueError, match="outside 1..5"):
        place("R", ds, 0)


def test_positions_default_to_all_and_are_checked() -> None:
    assert positions_for(5, None) == [1, 2, 3, 4, 5]
    assert positions_for(5, [5, 1, 3, 1]) == [1, 3, 5]
    with pytest.raises(ValueError, match=r"positions \[0, 7\] are outside 1..5"):
        positions_for(5, [0, 1, 7])


def test_binary_point_has_a_wilson_interval_that_is_not_zero_width_at_the_edges() -> None:
    p = point(1, [1.0] * 8 + [0.0] * 2)
    assert p.method == "wilson" and p.n == 10 and p.correctness == pytest.approx(0.8)
    assert p.low == pytest.approx(0.4902, abs=1e-4) and p.high == pytest.approx(0.9433, abs=1e-4)
    allright = point(2, [1.0] * 10)
    assert allright.high == 1.0 and allright.low is not None and allright.low < 0.75  # not the bootstrap's [1, 1]
    allwrong = point(3, [0.0] * 10)
    assert allwrong.low == 0.0 and allwrong.high is not None and allwrong.high > 0.25


def test_repeat_averaged_point_uses_the_bootstrap() -> None:
    p = point(1, [0.5, 1.0, 0.0, 1.0, 0.5, 1.0])
    assert p.method == "bootstrap" and p.low is not None and p.high is not None
    assert p.low < p.correctness < p.high  # type: ignore[operator]


def test_curve_pairs_best_and_worst_by_question() -> None:
    # 10 questions: right everywhere except position 3, where 6 of them fail (the middle is lost).
    rows = {f"q{i}": {1: 1.0, 2: 1.0, 3: 0.0 if i < 6 else 1.0, 4: 1.0} for i in range(10)}
    rows["q-timeout"] = {1: 1.0, 2: None, 3: 1.0, 4: 1.0}
    c = curve(rows, [1, 2, 3, 4])
    assert c.questions == 10 and c.excluded == ["q-timeout"]
    assert [p.n for p in c.points] == [10, 10, 10, 10]
    assert c.points[2].correctness == pytest.approx(0.4)
    assert c.best == 1 and c.worst == 3  # ties for best go to the earliest position
    assert c.delta == pytest.approx(-0.6)
    assert c.test == "exact McNemar"
    assert c.p_value == pytest.approx(2 * 0.5 ** 6)  # six discordant pairs, all one way
    assert c.delta_low is not None and c.delta_high is not None and c.delta_high < 0


def test_flat_curve_has_no_difference() -> None:
    rows = {f"q{i}": {1: float(i % 2), 2: float(i % 2)} for i in range(6)}
    c = curve(rows, [1, 2])
    assert c.best == c.worst == 1 and c.delta == 0.0 and c.p_value == 1.0
    # No discordant pair in six does not prove none is possible: an interval around 0, not the point 0.
    assert c.delta_low is not None and c.delta_high is not None and c.delta_low < -0.05 and c.delta_high > 0.05


def test_paired_difference_agrees_with_the_exact_test() -> None:
    # 30 questions: 4 right at the best position, 1 of them also at the worst; 3 discordant pairs, all one way.
    best, worst = [1.0] * 4 + [0.0] * 26, [1.0] + [0.0] * 29
    low, high = paired_difference(best, worst)
    assert low < -0.1 < high and high > 0  # McNemar: p = 0.25, so the interval must hold 0 too
    assert paired_difference(worst, best) == pytest.approx((-high, -low))  # swapping the sides negates it
    low, high = paired_difference([1.0] * 30, [1.0] * 10 + [0.0] * 20)  # 20 discordant of 30: p < 1e-5
    assert -1.0 <= low < -2 / 3 < high < 0


def test_repeat_averaged_curve_uses_the_sign_flip_test() -> None:
    rows = {f"q{i}": {1: 1.0, 2: 0.5} for i in range(8)}
    c = curve(rows, [1, 2])
    assert c.test == "sign-flip" and c.worst == 2 and c.delta == pytest.approx(-0.5)
    assert c.p_value is not None and c.p_value < 0.05


def test_empty_curve_says_so() -> None:
    c = curve({}, [1, 2, 3])
    assert c.questions == 0 and c.best is None and c.delta is None
    assert [p.correctness for p in c.points] == [None, None, None]
