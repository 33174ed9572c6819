"""Judge means carry an interval that resamples whole questions, and n as cases and as questions."""

from __future__ import annotations

import pytest

from nomad_eval.core.stats import mean_interval
from nomad_eval.core.summary import add_judge_intervals
from nomad_eval.records import AnswerCase


def _cases() -> list[AnswerCase]:
    # 6 questions x 2 repeats on e2e; verdicts on a 0/1/2 scale, one unparseable; oracle cases must not leak in.
    verdicts = {"a": (2, 2), "b": (0, 1), "c": (2, None), "d": (1, 1), "e": (0, 0), "f": (2, 1)}
    cases = [AnswerCase(id=q, mode="e2e", repeat=r, judges={"relevance": v[r]},
                        judges_weighted={"relevance": None if v[r] is None else v[r] * 0.9})
             for q, v in verdicts.items() for r in (0, 1)]
    cases.append(AnswerCase(id="a", mode="oracle", repeat=0, judges={"relevance": 0}))
    return cases


def test_interval_is_the_question_cluster_bootstrap_of_the_case_mean() -> None:
    cases = _cases()
    e2e = [c for c in cases if c.mode == "e2e" and c.judges["relevance"] is not None]
    values = [(c.judges["relevance"] or 0) / 2 for c in e2e]
    section = {"e2e.relevance": {"n": len(values), "mean": sum(values) / len(values), "mean_weighted": 0.5},
               "oracle.relevance": {"n": 1, "mean": 0.0}}
    add_judge_intervals(section, cases, {"relevance": 2}, resamples=500, seed=3)
    entry = section["e2e.relevance"]
    expected = mean_interval(values, [c.id for c in e2e], resamples=500, seed=3)
    assert expected is not None
    assert (entry["low"], entry["high"]) == pytest.approx((expected.low, expected.high))
    assert entry["low"] < entry["mean"] < entry["high"]
    assert entry["questions"] == 6 and entry["n"] == 11
    weighted = [(c.judges_weighted["relevance"] or 0) / 2 for c in e2e]
    w_iv = mean_interval(weighted, [c.id for c in e2e], resamples=500, seed=3)
    assert w_iv is not None and (entry["low_weighted"], entry["high_weighted"]) == pytest.approx((w_iv.low, w_iv.high))
    # One question judged: no interval, said as None rather than a zero-width one.
    assert section["oracle.relevance"]["low"] is None and section["oracle.relevance"]["questions"] == 1


def test_a_section_that_does_not_match_its_cases_is_refused() -> None:
    with pytest.raises(ValueError, match="parsed verdicts"):
        add_judge_intervals({"e2e.relevance": {"n": 3, "mean": 0.5}}, _cases(), {"relevance": 2}, 100, 0)
