"""Fresh failures: answers that fail on questions whose baseline answers all passed, and how often an unchanged
system shows that many, exactly.

The noise test on a metric's mean (core/noise.py) weighs every question alike, so a few steady questions made
flaky drown in the noise of the questions that always varied. This test looks where such a change shows: under
an unchanged system a question's answers on both sides are draws of one distribution, so, given the question's
failures among all its draws, each way of placing them between the sides is equally likely (a within-question
permutation test). The statistic counts the run's failures on the questions whose baseline draws all passed.
Conditioning on where the failures are is what keeps it honest: a question that passed its baseline draws by
luck (right nine times in ten) is as likely to fail on either side, and the test says so.

For one question with A baseline draws, F run draws and M failures among them, the baseline passes every draw
exactly when all M failures fall on the run's side, with probability C(F, M) / C(A + F, M); the question then
adds M to the count. The questions are independent, so the count's distribution under no change is the
convolution of these two-point laws: an exact p-value, no resampling.

Only the first A and F draws of each question take part, A and F the fewest any question has on its side: under
`repeats=auto` a question is asked again because of what its answers showed, so later draws are not placed at
random, while the first ones are asked of every question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

import numpy as np

from nomad_eval.core.questions import Question


@dataclass(frozen=True)
class Fresh:
    """The run's failures on questions whose baseline passed every draw, the questions they fell on, and how
    likely that many or more are under an unchanged system (None: no question has draws on both sides)."""

    failures: int
    questions: tuple[str, ...]
    p: float | None
    draws: tuple[int, int]  # the first draws of each side that took part (baseline, run)
    n: int = 0              # the questions with draws on both sides: what the count is over


def fresh_failures(pairs: Sequence[tuple[str, Sequence[bool], Sequence[bool]]]) -> Fresh:
    """`pairs`: each question's key and its pass outcomes in the order they were asked, baseline then run (an
    answer without an outcome left out)."""
    judged = [(k, b, r) for k, b, r in pairs if b and r]
    if not judged:
        return Fresh(0, (), None, (0, 0), 0)
    a, f = min(len(b) for _, b, _ in judged), min(len(r) for _, _, r in judged)
    law = np.ones(1)
    seen = 0
    hit: list[str] = []
    for key, b, r in judged:
        fails_b = sum(1 for x in b[:a] if not x)
        fails_r = sum(1 for x in r[:f] if not x)
        m = fails_b + fails_r
        if m == 0 or m > f:
            continue  # nothing to place, or the run's draws cannot hold every failure: adds 0 on every placement
        q = comb(f, m) / comb(a + f, m)
        step = np.zeros(m + 1)
        step[0], step[m] = 1 - q, q
        law = np.convolve(law, step)
        if fails_b == 0:
            seen += m
            hit.append(key)
    p = float(min(1.0, law[seen:].sum())) if seen else 1.0
    return Fresh(seen, tuple(hit), p, (a, f), len(judged))


def fresh_in_mode(pairs: Sequence[tuple[Question, Question]], mode: str) -> Fresh:
    """The fresh failures of one generation mode's paired questions, from each side's draws in order."""
    return fresh_failures([(b.key, [x for x in b.draws if x is not None], [x for x in r.draws if x is not None])
                           for b, r in pairs if b.mode == mode])


def fresh_text(f: Fresh) -> str:
    """How the fresh failures read in a verdict's reason."""
    if f.p is None:
        return ""
    return (f"{f.failures} fresh failure(s) on {len(f.questions)} of n={f.n} question(s), on those the baseline "
            f"passed every time (first {f.draws[0]} baseline and {f.draws[1]} run draws, exact p={f.p:.3g})")
