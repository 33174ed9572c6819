"""Run-to-run noise of a gated metric's paired delta, and the rule that turns it into verdicts for all of them.

A question's repeats are draws of one answer distribution. Its delta's variance under an unchanged system is the
within-question variance times (1/R_base + 1/R_run): the variance is pooled over both sides' repeats (each about
its own side's mean, so a real change of the mean does not pass for noise), which is what lets a side with one
repeat borrow the other side's. A question neither side repeated has no measured noise: on a backend that is
deterministic by construction (the mock, replays from the response cache) it is zero; otherwise the gate cannot
tell a flip from noise and says so.

Instability is a share of questions, each one unstable with the probability that its R repeats disagree,
1 - p^R - (1 - p)^R, where p is the question's pass probability (both sides' repeats pooled: under an unchanged
system they are draws of the same p). That is its noise, not a bare tolerance.

The family: every gated metric whose noise is measured is tested at once (one-sided, the drop past its tolerance
in units of its noise) and Holm keeps the chance that an unchanged system fails any of them at 5%. Deterministic
metrics keep their exact rule and take no part: an unchanged deterministic system never moves them.
bench/flaky_gate.py measures the false-alarm rate and the power of this rule through compare_questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from nomad_eval.core.questions import Question

INSTABILITY = "instability"


@dataclass(frozen=True)
class Noise:
    """The delta's run-to-run standard error (None: not measured) and where it came from, for the report."""

    se: float | None
    source: str


def _within(b: Question, r: Question, name: str) -> float | None:
    """The question's pooled within-repeat variance of `name`, None when neither side has two repeats."""
    df = (b.repeats - 1) + (r.repeats - 1)
    if df <= 0:
        return None
    squares = sum(q.noise.get(name, 0.0) * q.repeats * (q.repeats - 1) for q in (b, r))
    return squares / df


def _disagreement_variance(b: Question, r: Question) -> float | None:
    """The variance of the two sides' instability indicators: each side unstable with the probability that its
    repeats disagree, at the pass probability both sides' repeats estimate together."""
    judged = [(q.passed, q.repeats) for q in (b, r) if q.passed is not None]
    if not judged or b.repeats < 2 or r.repeats < 2:
        return None
    p = sum(rate * n for rate, n in judged) / sum(n for _, n in judged)
    out = 0.0
    for q in (b, r):
        d = 1 - p ** q.repeats - (1 - p) ** q.repeats
        out += d * (1 - d)
    return out


def delta_noise(pairs: Sequence[tuple[Question, Question]], name: str, deterministic: bool) -> Noise:
    """The run-to-run standard error of the mean delta of `name` over `pairs`, and its source."""
    if not pairs or all(b.mode is None for b, _ in pairs):
        return Noise(0.0, "deterministic (retrieval)")
    instability = name.rsplit(".", 1)[-1] == INSTABILITY
    parts = [(_disagreement_variance(b, r) if instability else _within(b, r, name),
              1.0 if instability else 1 / b.repeats + 1 / r.repeats) for b, r in pairs]
    measured = [v * w for v, w in parts if v is not None]
    if deterministic:
        return Noise(math.sqrt(sum(measured)) / len(pairs), "deterministic by construction (mock or replayed "
                     "answers)" if not measured else _source(pairs))
    if not measured:
        return Noise(None, "not measured (repeats = 1)")
    return Noise(math.sqrt(sum(measured)) / len(pairs), _source(pairs))


def _source(pairs: Sequence[tuple[Question, Question]]) -> str:
    rb = sorted({b.repeats for b, _ in pairs})
    rr = sorted({r.repeats for _, r in pairs})

    def said(xs: list[int]) -> str:
        return str(xs[0]) if len(xs) == 1 else f"{xs[0]}-{xs[-1]}"

    if rb == [1]:
        return f"from the run's repeats ({said(rr)}; the baseline has 1)"
    if rr == [1]:
        return f"from the baseline's repeats ({said(rb)}; the run has 1)"
    return f"from both sides' repeats (baseline {said(rb)}, run {said(rr)})"


def noise_p(worse: float, allowed: float, se: float) -> float:
    """One-sided p of a drop this far past the tolerance if only run-to-run noise moved it."""
    return 1.0 - NormalDist().cdf((worse - allowed) / se)


def repeats_for_noise(pairs: Sequence[tuple[Question, Question]], allowed: float, family: int,
                      power: float = 0.8) -> int:
    """Repeats per side that let a drop of twice the tolerance clear the family's noise bar at `power`, taking
    each question whose pass differs between the sides for one that varies at a pass probability of one half:
    what a "cannot tell" verdict recommends."""
    z = NormalDist().inv_cdf(1 - 0.05 / max(1, family)) + NormalDist().inv_cdf(power)
    varying = max(1, sum(1 for b, r in pairs if b.passed != r.passed))
    variance = varying * 0.25 * 2  # a pass at one half varies 0.25 a draw, on each side
    return max(2, math.ceil(variance * z ** 2 / (len(pairs) * allowed) ** 2))
