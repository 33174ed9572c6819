"""Run-to-run noise of a gated metric's paired delta, and the rule that turns it into verdicts for all of them.

A question's repeats are draws of one answer distribution. Its delta's variance under an unchanged system is the
within-question variance times (1/R_base + 1/R_run): the variance is pooled over both sides' repeats (each about
its own side's mean, so a real change of the mean does not pass for noise), which is what lets a side with one
repeat borrow the other side's. A question neither side repeated has no measured noise: on a backend that is
deterministic by construction (the mock, replays from the response cache) it is zero; otherwise the gate cannot
tell a flip from noise and says so, unless the question's history holds earlier draws of it: earlier runs of
the same golden and system (gate/history.py reads them), pooled with the two current draws as one more
question's repeats (`History`).

Instability is a share of questions, each one unstable with the probability that its R repeats disagree,
1 - p^R - (1 - p)^R, where p is the question's pass probability (both sides' repeats pooled: under an unchanged
system they are draws of the same p). That is its noise, not a bare tolerance.

The family: every gated metric whose noise is measured is tested at once (one-sided, its drop in units of its
noise) and Holm keeps the chance that an unchanged system fails any of them at 5%. A regression is a drop past the
tolerance, as for a deterministic metric, that this test says is not chance. Deterministic
metrics keep their exact rule and take no part: an unchanged deterministic system never moves them.
bench/flaky_gate.py measures the false-alarm rate and the power of this rule through compare_questions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from nomad_eval.core.questions import Question

INSTABILITY = "instability"
HISTORY = "from question history"  # how a noise source taken from earlier draws begins


@dataclass(frozen=True)
class Noise:
    """The delta's run-to-run standard error (None: not measured) and where it came from, for the report."""

    se: float | None
    source: str
    df: float = math.inf  # Satterthwaite's degrees of freedom of the variance estimate
    step: float = 0.0     # the smallest move of the mean delta of 0/1 draws: half of it corrects for continuity


@dataclass(frozen=True)
class History:
    """Earlier draws of the questions: question key -> that question in each earlier run of the same golden and
    system that asked it, and how many earlier runs they come from. A question asked once on both sides takes its
    run-to-run noise from these draws pooled with its two current ones."""

    questions: Mapping[str, Sequence[Question]] = field(default_factory=dict)
    runs: int = 0

    def of(self, key: str, name: str) -> list[Question]:
        """The earlier questions of `key` that measured `name`."""
        return [q for q in self.questions.get(key, ()) if q.values.get(name) is not None]


def _within(b: Question, r: Question, name: str) -> float | None:
    """The question's pooled within-repeat variance of `name`, None when neither side has two repeats."""
    df = (b.repeats - 1) + (r.repeats - 1)
    if df <= 0:
        return None
    squares = sum(q.noise.get(name, 0.0) * q.repeats * (q.repeats - 1) for q in (b, r))
    return squares / df


def _pooled_rate(b: Question, r: Question, name: str) -> float | None:
    """A rate's per-draw variance if both sides drew from one distribution: m(1 - m) at the mean m of all the
    question's draws (with the small-sample factor), the most a value in [0, 1] with that mean can vary. Estimated
    under the very hypothesis the gate tests, it does not shrink on the draws that look most like a change (all
    passes on one side, all failures on the other), as each side's own variance does."""
    vb, vr = b.values.get(name), r.values.get(name)
    n = b.repeats + r.repeats
    if vb is None or vr is None or max(b.repeats, r.repeats) < 2:
        return None
    m = min(1.0, max(0.0, (vb * b.repeats + vr * r.repeats) / n))
    return m * (1 - m) * n / (n - 1)


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


def _varies(pairs: Sequence[tuple[Question, Question]], name: str) -> bool:
    """Whether any question's repeats disagree on `name` on either side: else the metric is deterministic here."""
    if name.rsplit(".", 1)[-1] == INSTABILITY:
        return any(q.unstable for pair in pairs for q in pair)
    return any(q.noise.get(name, 0.0) > 0 for pair in pairs for q in pair)


def delta_noise(pairs: Sequence[tuple[Question, Question]], name: str, deterministic: bool, rate: bool = True,
                history: History | None = None) -> Noise:
    """The run-to-run standard error of the mean delta of `name` over `pairs`, and its source. `rate`: the
    metric's values lie in [0, 1] (rates, pass rates), whose variance under no change is bounded by their mean.
    `history`: earlier draws of the questions, for those asked once on both sides (not for instability, which
    needs repeats within one run, nor on a backend deterministic by construction)."""
    if not pairs or all(b.mode is None for b, _ in pairs):
        return Noise(0.0, "deterministic (retrieval)")
    instability = name.rsplit(".", 1)[-1] == INSTABILITY
    earlier = {} if history is None or instability or deterministic else \
        {b.key: got for b, r in pairs if max(b.repeats, r.repeats) == 1 and (got := history.of(b.key, name))}
    if not any(max(b.repeats, r.repeats) > 1 for b, r in pairs) and not earlier:
        return Noise(0.0, "deterministic by construction (mock or replayed answers)") if deterministic \
            else Noise(None, "not measured (repeats = 1)")
    source = _source(pairs, earlier, history)
    if not _varies(pairs, name) and not any(_drawn([*qs, b], name)[2] > 0 for b, _ in pairs
                                            if (qs := earlier.get(b.key))):
        return Noise(0.0, source + ", every question's repeats agree")
    measured = [share for b, r in pairs if (share := _pair_variance(b, r, name, rate, earlier)) is not None]
    total = sum(v for v, _ in measured)
    # A sum of a few questions' estimated variances is itself uncertain: Satterthwaite's degrees of freedom let
    # the test's t distribution say so.
    df = total ** 2 / sum(v ** 2 / dof for v, dof in measured if v > 0) if total > 0 else math.inf
    # 0/1 draws move the mean delta in steps: a normal p without half a step of continuity correction overstates
    # how rare the step at the edge is.
    step = 1 / len(pairs) if instability else 1 / (len(pairs) * max(max(b.repeats, r.repeats) for b, r in pairs))
    return Noise(math.sqrt(total) / len(pairs), source, df, step if rate or instability else 0.0)


def _pair_variance(b: Question, r: Question, name: str, rate: bool, earlier: Mapping[str, Sequence[Question]]
                   ) -> tuple[float, float] | None:
    """One question's share of the variance of the summed delta, and its degrees of freedom; None: not measured."""
    if name.rsplit(".", 1)[-1] == INSTABILITY:
        v = _disagreement_variance(b, r)
        return None if v is None else (v, b.repeats + r.repeats - 1)
    w = 1 / b.repeats + 1 / r.repeats
    if earlier and max(b.repeats, r.repeats) == 1:
        # Asked once a side, with history in use: its earlier draws (none: only its two current ones) pooled.
        got = _from_history(b, r, name, rate, earlier.get(b.key, ()))
        return None if got is None else (got[0] * w, got[1])
    v = _pooled_rate(b, r, name) if rate else _within(b, r, name)
    return None if v is None else (v * w, b.repeats + r.repeats - (1 if rate else 2))


def _drawn(questions: Sequence[Question], name: str) -> tuple[float, int, float]:
    """All the draws of `questions` on `name` taken as one sample: their mean, their number and their sum of
    squares about that mean (each question's squares about its own mean, plus its mean's distance from the
    common one)."""
    n = sum(q.repeats for q in questions)
    m = sum(float(q.values.get(name) or 0.0) * q.repeats for q in questions) / n
    squares = sum(q.noise.get(name, 0.0) * q.repeats * (q.repeats - 1)
                  + q.repeats * (float(q.values.get(name) or 0.0) - m) ** 2 for q in questions)
    return m, n, squares


def _from_history(b: Question, r: Question, name: str, rate: bool, earlier: Sequence[Question]
                  ) -> tuple[float, float] | None:
    """The per-draw variance of `name` of a question asked once on both sides, and its degrees of freedom, from its
    earlier draws pooled with the current ones: a rate's as _pooled_rate's (m(1 - m) at the mean of all of them,
    estimated under the hypothesis the gate tests); another metric's about the mean of the draws of the
    baseline's system (the earlier ones and the baseline's), so a real change of the run does not pass for noise."""
    if rate:
        m, n, _ = _drawn([*earlier, b, r], name)
        m = min(1.0, max(0.0, m))
        return (m * (1 - m) * n / (n - 1), n - 1) if n > 1 else None
    _, n, squares = _drawn([*earlier, b], name)
    return (squares / (n - 1), n - 1) if n > 1 else None


def _source(pairs: Sequence[tuple[Question, Question]], earlier: Mapping[str, Sequence[Question]] | None = None,
            history: History | None = None) -> str:
    """Where the noise came from: the sides' repeats, and the history of the questions asked once on both."""
    repeated = [(b, r) for b, r in pairs if max(b.repeats, r.repeats) > 1]
    if not earlier or history is None:
        return _repeats_source(pairs)
    draws = sum(q.repeats for qs in earlier.values() for q in qs)
    bare = sum(1 for b, r in pairs if max(b.repeats, r.repeats) == 1 and b.key not in earlier)
    said = (f"{HISTORY} ({history.runs} earlier run(s), {draws} draws of {len(earlier)} question(s))"
            + (f"; {bare} question(s) without history from their two draws" if bare else ""))
    return f"{_repeats_source(repeated)}; asked once a side: {said}" if repeated else said


def _repeats_source(pairs: Sequence[tuple[Question, Question]]) -> str:
    rb = sorted({b.repeats for b, _ in pairs})
    rr = sorted({r.repeats for _, r in pairs})

    def said(xs: list[int]) -> str:
        return str(xs[0]) if len(xs) == 1 else f"{xs[0]}-{xs[-1]}"

    if rb == [1]:
        return f"from the run's repeats ({said(rr)}; the baseline has 1)"
    if rr == [1]:
        return f"from the baseline's repeats ({said(rb)}; the run has 1)"
    return f"from both sides' repeats (baseline {said(rb)}, run {said(rr)})"


def noise_p(worse: float, se: float, df: float = math.inf) -> float:
    """One-sided p of a drop this large (in the metric's worse direction) if only run-to-run noise moved it: a t
    test with the noise estimate's degrees of freedom."""
    from scipy import stats  # where a statistic is computed (core/stats.py says why)

    return float(stats.t.sf(worse / se, df)) if math.isfinite(df) else 1.0 - NormalDist().cdf(worse / se)


def repeats_for_noise(pairs: Sequence[tuple[Question, Question]], allowed: float, family: int,
                      power: float = 0.8) -> int:
    """Repeats per side that let a drop of twice the tolerance clear the family's noise bar at `power`, taking
    each question whose pass differs between the sides for one that varies at a pass probability of one half:
    what a "cannot tell" verdict recommends."""
    z = NormalDist().inv_cdf(1 - 0.05 / max(1, family)) + NormalDist().inv_cdf(power)
    varying = max(1, sum(1 for b, r in pairs if b.passed != r.passed))
    variance = varying * 0.25 * 2  # a pass at one half varies 0.25 a draw, on each side
    return max(2, math.ceil(variance * z ** 2 / (len(pairs) * allowed) ** 2))


def planned_se(questions: Sequence[Question], name: str, repeats: int, drop: float = 0.0) -> float | None:
    """The run-to-run noise the gate would measure on `name` between two runs of this system with `repeats`
    repeats a side, from one run's questions (each question's pass rate for instability, its mean for a rate);
    None when none of them was repeated, so nothing says how it varies. `drop`: a rate's drop made of whole
    questions flipping, whose pooled draws (half passes) the gate's noise then holds too."""
    measured = [q for q in questions if q.values.get(name) is not None and q.repeats > 1]
    if not measured:
        return None
    if name.rsplit(".", 1)[-1] == INSTABILITY:
        rates = [q.passed for q in measured if q.passed is not None]
        variance = sum(2 * d * (1 - d) for p in rates for d in [1 - p ** repeats - (1 - p) ** repeats])
    else:
        variance = sum(m * (1 - m) * 2 / repeats for q in measured for m in [min(1.0, max(0.0, q.values[name] or 0.0))])
        variance += drop * len(measured) * 0.25 * (2 * repeats / (2 * repeats - 1)) * 2 / repeats
    return math.sqrt(variance) / len(measured)


def gate_power(se: float, drop: float, allowed: float, family: int) -> float:
    """How often the gate finds a true drop of `drop`: the delta must pass the tolerance and clear the family's
    first Holm step (one-sided, alpha / family), with noise `se` (normal approximation)."""
    if se == 0:
        return 1.0 if drop > allowed else 0.0
    bar = max(allowed, NormalDist().inv_cdf(1 - 0.05 / max(1, family)) * se)
    return 1.0 - NormalDist().cdf((bar - drop) / se)


def repeats_for_drop(questions: Sequence[Question], name: str, drop: float, allowed: float, family: int,
                     power: float = 0.8, most: int = 64) -> int | None:
    """Fewest repeats a side at which the gate finds a drop of `drop` with `power`; None when no repeats of this
    suite measure how it varies, or not even `most` repeats would."""
    for repeats in range(2, most + 1):
        se = planned_se(questions, name, repeats, drop)
        if se is None:
            return None
        if gate_power(se, drop, allowed, family) >= power:
            return repeats
    return None


def gate_drop_at(questions: Sequence[Question], name: str, allowed: float, family: int, repeats: int,
                 power: float = 0.8) -> float | None:
    """The drop the gate finds with `power` at `repeats` repeats a side: its own 80% point, beside question
    sampling's "detectable in general"."""
    se = planned_se(questions, name, max(2, repeats))
    if se is None:
        return None
    bar = max(allowed, NormalDist().inv_cdf(1 - 0.05 / max(1, family)) * se)
    return bar + NormalDist().inv_cdf(power) * se
