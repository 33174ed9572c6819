from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from nomad_eval.judges.agreement import (
    agreement,
    agreement_parsed,
    cohen_kappa,
    coverage,
    flip_rate,
    kappa_figure,
    mean_shift,
    proportion,
    spearman,
    spearman_figure,
)
from nomad_eval.judges.judge import parse_verdict

verdicts = st.one_of(st.none(), st.integers(0, 2))
pairs = st.lists(st.tuples(st.integers(0, 2), verdicts), min_size=2, max_size=60)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_kappa_counts_a_missing_verdict_as_a_category_that_never_agrees(p: list[tuple[int, int | None]]) -> None:
    h, j = [a for a, _ in p], [b for _, b in p]
    coded = [-1 if b is None else b for b in j]  # a label no human gives: sklearn's kappa with the miss made explicit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where kappa is undefined (one shared class)
        ref = cohen_kappa_score(h, coded)
    ours = cohen_kappa(h, j)
    if math.isnan(ref):
        assert ours is None
    else:
        assert ours == pytest.approx(ref, abs=1e-9)
    assert agreement(h, j).value == pytest.approx(sum(a == b for a, b in p) / len(p))
    assert coverage(j).value == pytest.approx(sum(b is not None for b in j) / len(j))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=3, max_size=60))
def test_spearman_matches_scipy(p: list[tuple[int, int]]) -> None:
    h, j = [a for a, _ in p], [b for _, b in p]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input, where both sides give "undefined"
        ref = spearmanr(h, j).statistic
    ours = spearman(h, j)
    assert (ours is None) == math.isnan(ref)
    if ours is not None:
        assert ours == pytest.approx(ref, abs=1e-9)


def test_an_unparseable_verdict_is_a_miss_not_a_vanished_example() -> None:
    human = [1, 0, 1, 0, 1, 0, 1, 0]
    judge = [1, 0, 1, 0, None, None, None, None]  # perfect where it answered, silent on half
    assert agreement(human, judge).value == 0.5
    assert agreement_parsed(human, judge).value == 1.0  # what calibration used to report
    assert coverage(judge).value == 0.5
    assert cohen_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, [1, 0, 1, 0, -1, -1, -1, -1]))
    assert cohen_kappa(human, judge) < 1.0  # type: ignore[operator]


def test_kappa_is_null_when_undefined_never_one() -> None:
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # one class on both sides: no chance agreement to correct
    fig = kappa_figure([1] * 30, [1] * 30)
    assert fig.value is None and fig.low is None and fig.high is None and fig.n == 30
    assert cohen_kappa([1, 1, 1], [None, None, None]) == 0.0  # defined: the judge never matched


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 46), (17, 46), (27, 30), (30, 30)])
def test_proportions_carry_the_wilson_interval(k: int, n: int) -> None:
    fig = proportion(k, n)
    low, high = _wilson(k, n)
    assert fig.value == k / n and fig.n == n and fig.method == "wilson"
    assert fig.low == pytest.approx(max(0.0, low), abs=1e-9) and fig.high == pytest.approx(min(1.0, high), abs=1e-9)
    assert proportion(0, 0).value is None and proportion(0, 0).low is None


def test_bootstrap_intervals_are_seeded_and_hold_the_estimate() -> None:
    human = [i % 2 for i in range(40)]
    judge = [h if i % 5 else 1 - h for i, h in enumerate(human)]  # right 4 times in 5
    a, b = kappa_figure(human, judge, 500, seed=1), kappa_figure(human, judge, 500, seed=1)
    assert a == b  # same seed, same interval
    assert a != kappa_figure(human, judge, 500, seed=2)
    assert a.low is not None and a.high is not None and a.low < a.value < a.high  # type: ignore[operator]
    # Four times the data: a narrower interval around the same kappa.
    big = kappa_figure(human * 4, judge * 4, 500, seed=1)
    assert big.value == pytest.approx(a.value)
    assert big.high - big.low < a.high - a.low  # type: ignore[operator]
    rho = spearman_figure([0, 1, 2] * 12, [0, 1, 2] * 10 + [2, 1, 0] * 2, 500, seed=1)
    assert rho.n == 36 and rho.low is not None and rho.low < rho.value < rho.high  # type: ignore[operator]


def test_flip_rate_and_mean_shift() -> None:
    fig = flip_rate([[1, 1], [0, 1], [None, 1], [1, None, 0]])
    assert fig.value == pytest.approx(2 / 3) and fig.n == 3
    assert flip_rate([[None], [1]]).value is None
    shift = mean_shift([0, 0, 1, 2, None], [1, 0, 1, 2, 2], top=2, resamples=500)
    assert shift.value == pytest.approx(0.5 / 4) and shift.n == 4  # the pair with a missing verdict is left out
    assert shift.low is not None and shift.low <= shift.value <= shift.high  # type: ignore[operator]
    still = mean_shift([1, 0, 1], [1, 0, 1], top=1)
    assert (still.value, still.low, still.high) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"verdict": 1, "reason": "ok"}', 1),
    ('Sure! ```json\n{"verdict": 0, "reason": "x"}\n```', 0),
    ('{"verdict": 3, "reason": "off scale"}', None),
    ('{"verdict": "1"}', None),
    ('{"verdict": true}', None),
    ("The answer is faithful.", None),
    ('{"verdict": 1, "reason": }', None),
])
def test_parse_verdict_never_guesses(text: str, expected: int | None) -> None:
    assert parse_verdict(text, [0, 1])[0] == expected
