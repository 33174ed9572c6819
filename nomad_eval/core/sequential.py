"""When to stop asking a question again (`repeats=auto`): an anytime-valid confidence sequence on its pass
probability, and the rule that reads it beside the baseline's answers.

A question's answers arrive one at a time and the rule looks after every one, so a fixed-n interval would
overstate what a lucky streak shows (looking often is a multiple test). A confidence sequence holds at every n at
once: with the uniform prior, the mixture likelihood ratio B(k + 1, n - k + 1) / (p^k (1 - p)^(n - k)) is a
nonnegative martingale with mean 1 under the true p, so by Ville's inequality it ever passes 1/alpha with chance at
most alpha; the p it has not passed are the sequence. The rule stops a question when more answers cannot move it:
- its answers and the baseline's are unanimous and the same (an always-right question that is right again);
- the run's sequence lies wholly below or above the baseline's (the change is settled either way);
- it reached `most` answers.
A fresh failure of a question the baseline always passed is no longer unanimous with it, so it is asked again:
it counts only with the draws that confirm it. The verdict is the gate's own (core/noise.py) on the answers the
rule collected; bench/flaky_gate.py measures its false-alarm rate, power and calls through the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, xlog1py, xlogy

GRID = np.linspace(0.0, 1.0, 2001)
ALPHA = 0.05


def pass_sequence(passes: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """The (1 - alpha) anytime-valid confidence sequence for a pass probability after `passes` of `n` answers."""
    if n == 0:
        return 0.0, 1.0
    log_likelihood = xlogy(passes, GRID) + xlog1py(n - passes, -GRID)
    inside = GRID[betaln(passes + 1, n - passes + 1) - log_likelihood < np.log(1 / alpha)]
    return float(inside.min()), float(inside.max())


@dataclass(frozen=True)
class Rule:
    """How `repeats=auto` asks: at least `first` answers a question, at most `most`, and the sequences' alpha."""

    most: int
    first: int = 1
    alpha: float = ALPHA
    agree: int = 3  # unanimous answers that stop a question without a baseline, and that a baseline needs to stop one


def settled(rule: Rule, base: tuple[int, int] | None, passes: int, n: int) -> str | None:
    """Why the question needs no further answer after `passes` of `n` (None: ask again). `base`: the baseline's
    (passes, answers) for it; None when there is no baseline (a first run, before a promotion) or it has one
    answer, where `agree` unanimous answers stop and disagreeing ones are measured to `most`. A question that
    settles at its `most`-th answer says why it settled rather than that it reached the bound."""
    if n < max(1, rule.first):
        return None if n < rule.most else "repeats.max"
    why = _compared(rule, base, passes, n)
    return why if why is not None or n < rule.most else "repeats.max"


def _compared(rule: Rule, base: tuple[int, int] | None, passes: int, n: int) -> str | None:
    unanimous = passes in (0, n)
    if base is None or base[1] < rule.agree:  # too few baseline answers to say that it does not vary
        return "answers agree" if unanimous and n >= rule.agree else None
    kb, nb = base
    if kb in (0, nb) and unanimous and (passes == n) == (kb == nb):
        return "agrees with the baseline"
    low, high = pass_sequence(passes, n, rule.alpha)
    base_low, base_high = pass_sequence(kb, nb, rule.alpha)
    if high < base_low:
        return "worse than the baseline"
    if low > base_high:
        return "better than the baseline"
    return None


def expected_calls(rule: Rule, base: Sequence[tuple[int, int] | None], draws: int = 200, seed: int = 0,
                   budget: int | None = None) -> tuple[float, float]:
    """The calls the rule makes on average (and their standard deviation) over one run of these questions if the
    system is unchanged: each question answered right with the baseline's pass rate (one half without one),
    simulated `draws` times with its own generator. What plan prints as the expected calls per verdict. A
    question's answers do not depend on the others', so a `budget` on all the calls caps each draw's total."""
    rng = np.random.default_rng(seed)
    totals = np.zeros(draws)
    for b in base:
        p = 0.5 if b is None or b[1] == 0 else b[0] / b[1]
        for d in range(draws):
            passes = n = 0
            while settled(rule, b, passes, n) is None:
                passes += int(rng.random() < p)
                n += 1
            totals[d] += n
    if budget is not None:
        totals = np.minimum(totals, budget)
    return float(totals.mean()), float(totals.std())
