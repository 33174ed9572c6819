"""The repeats=auto kernel: its confidence sequence holds at every look, and its rule stops only settled questions."""

from __future__ import annotations

import numpy as np
from scipy import stats

from nomad_eval.core.adaptive import Tally, ask_until_settled, base_tallies
from nomad_eval.core.sequential import Rule, expected_calls, pass_sequence, settled


def _ever_missed(p: float, looks: int, sequences: int, interval: object) -> float:
    """Share of answer sequences at whose some look the interval excludes the true p."""
    rng = np.random.default_rng(7)
    missed = 0
    for _ in range(sequences):
        passes = np.cumsum(rng.random(looks) < p)
        for n in range(1, looks + 1):
            low, high = interval(int(passes[n - 1]), n)  # type: ignore[operator]
            if not low <= p <= high:
                missed += 1
                break
    return missed / sequences


def _wilson(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return float(ci.low), float(ci.high)


def test_the_sequence_holds_at_every_look_where_a_fixed_interval_does_not() -> None:
    ours = _ever_missed(0.3, 60, 400, pass_sequence)
    fixed = _ever_missed(0.3, 60, 400, _wilson)
    assert ours <= 0.05
    assert fixed > 0.15  # looking after every answer inflates a fixed-n interval's misses
    low, high = pass_sequence(0, 0)
    assert (low, high) == (0.0, 1.0)
    assert pass_sequence(6, 6)[0] > pass_sequence(3, 3)[0]  # more agreeing answers, a tighter bound


def test_the_rule_stops_agreeing_questions_and_asks_a_fresh_failure_again() -> None:
    rule = Rule(most=6, agree=4)
    assert settled(rule, (4, 4), 1, 1) == "agrees with the baseline"
    assert settled(rule, (0, 4), 0, 1) == "agrees with the baseline"
    assert settled(rule, (4, 4), 0, 1) is None  # a question that used to pass fails: confirm it
    assert settled(rule, (2, 2), 1, 1) is None  # two baseline answers are too few to call it steady
    assert settled(rule, None, 3, 3) is None and settled(rule, None, 4, 4) == "answers agree"
    assert settled(rule, None, 2, 4) is None and settled(rule, None, 3, 6) == "repeats.max"
    assert settled(Rule(most=40), (30, 30), 0, 8) == "worse than the baseline"
    assert settled(Rule(most=40), (0, 30), 8, 8) == "better than the baseline"
    assert settled(Rule(most=40), (15, 30), 2, 8) is None


def test_expected_calls_follow_the_baseline() -> None:
    rule = Rule(most=6, agree=4)
    steady, spread = expected_calls(rule, [(4, 4)] * 10, draws=50, seed=1)
    assert steady == 10 and spread == 0
    flaky, _ = expected_calls(rule, [(3, 6)] * 10, draws=50, seed=1)
    assert 55 <= flaky <= 60  # a flaky question is measured to repeats_max unless it settles first
    assert expected_calls(rule, [(3, 6)] * 10, draws=50, seed=1) == expected_calls(rule, [(3, 6)] * 10, draws=50,
                                                                                    seed=1)


def test_the_loop_asks_round_by_round_within_the_budget() -> None:
    rounds: list[list[tuple[str, int]]] = []
    script = {"a": [True] * 6, "b": [True, False] * 3, "c": [None, None, None, None, None, None]}

    def ask(batch: list[tuple[str, int]]) -> list[bool | None]:
        rounds.append(batch)
        return [script[k][r] for k, r in batch]

    base = base_tallies({"a": [True] * 4, "b": [True, False, True, False]})
    out = ask_until_settled(["a", "b", "c"], base, ask, Rule(most=6, agree=4))
    assert out["a"] == Tally(1, 1, 1, "agrees with the baseline")
    assert (out["b"].asked, out["b"].passes, out["b"].why) == (6, 3, "repeats.max")
    assert (out["c"].asked, out["c"].answers) == (6, 0)  # calls without an outcome still count toward most
    assert rounds[0] == [("a", 0), ("b", 0), ("c", 0)] and rounds[1] == [("b", 1), ("c", 1)]
    spent = ask_until_settled(["b", "c"], base, ask, Rule(most=6, agree=4), budget=5)
    assert sum(t.asked for t in spent.values()) == 5 and spent["c"].why == "model-call budget spent"
