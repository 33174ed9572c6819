from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from nomad_eval.judges.agreement import agreement, cohen_kappa, flip_rate, spearman
from nomad_eval.judges.judge import parse_verdict

pairs = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=60)


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_kappa_and_spearman_match_reference_implementations(p: list[tuple[int, int]]) -> None:
    h, j = [a for a, _ in p], [b for _, b in p]
    if len(set(h) | set(j)) > 1:
        assert cohen_kappa(h, j) == pytest.approx(cohen_kappa_score(h, j), abs=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input, where both sides give "undefined"
        ref = spearmanr(h, j).statistic
    ours = spearman(h, j)
    if ours is None:
        assert len(set(h)) == 1 or len(set(j)) == 1
    else:
        assert ours == pytest.approx(ref, abs=1e-9)
    assert agreement(h, j) == pytest.approx(sum(a == b for a, b in p) / len(p))


def test_flip_rate() -> None:
    assert flip_rate([[1, 1], [0, 1], [None, 1], [1, None, 0]]) == pytest.approx(2 / 3)
    assert flip_rate([[None], [1]]) is None


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
