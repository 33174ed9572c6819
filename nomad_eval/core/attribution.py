"""Which change flipped which question: attribution by replay, over per-question values. Pure: the caller measures.

`measure(reverted)` gives every question's gated values with those changes reverted on the run's side (the empty
set replays the run, every change replays the baseline). A flipped question is explained by leave-one-out first
(the one change whose reverting alone restores the baseline's value); where that is ambiguous (interacting
changes), by applying one change at a time to the baseline's side, then by reverting pairs. Per gated metric the
delta is split by change: each part is the run's mean minus the mean with that change alone reverted; the
interaction term is what the parts do not add up to, and "not reproduced" is what the replay itself misses (a
change it cannot revert, such as another embedder). The parts are summed in rational arithmetic, so parts plus
interaction plus not reproduced equal the delta exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations

Values = Mapping[str, Mapping[str, float | None]]  # question id -> gated metric -> value
EPS = 1e-9
INTERACTION = "interaction"
NOT_REPRODUCED = "not reproduced by the replay"


@dataclass(frozen=True)
class Part:
    change: str
    value: float
    questions: tuple[str, ...] = ()


@dataclass
class Attribution:
    lines: list[str] = field(default_factory=list)          # one per flipped question and metric
    waterfall: dict[str, list[Part]] = field(default_factory=dict)
    replays: int = 0                                         # retrievals replayed (one per variant)


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= EPS


def _num(v: float) -> str:
    return f"{v:.4g}"


class _Measured:
    """measure() once per set of reverted changes."""

    def __init__(self, measure: Callable[[frozenset[str]], Values]) -> None:
        self.measure = measure
        self.seen: dict[frozenset[str], Values] = {}

    def __call__(self, reverted: frozenset[str]) -> Values:
        if reverted not in self.seen:
            self.seen[reverted] = self.measure(reverted)
        return self.seen[reverted]


def _value(values: Values, q: str, m: str) -> float | None:
    return (values.get(q) or {}).get(m)


def _cause(q: str, m: str, b: float, r: float, changes: Sequence[str], got: _Measured,
           describe: Callable[[str, str], str]) -> str:
    everything = frozenset(changes)
    if not _close(_value(got(frozenset()), q, m), r):
        return "not explained: the replay does not reproduce the run's value (a change it cannot revert)"
    alone = [c for c in changes if _close(_value(got(frozenset([c])), q, m), b)]
    if len(alone) == 1:
        return f"because {describe(alone[0], q)} (reverting it alone restores it)"
    if alone:
        # Each of them undoes the flip alone: the flip needs all of them together.
        return (f"interaction of {' and '.join(describe(c, q) for c in alone)} (each is needed: reverting any one "
                "alone restores it)")
    applied = [c for c in changes if _close(_value(got(everything - {c}), q, m), r)]
    if len(applied) == 1:
        return f"because {describe(applied[0], q)} (applying it alone to the baseline flips it)"
    for pair in combinations(changes, 2):
        if _close(_value(got(frozenset(pair)), q, m), b):
            return f"interaction of {pair[0]} and {pair[1]} (reverting both restores it, either alone does not)"
    if not _close(_value(got(everything), q, m), b):
        return "not explained: the replay does not reproduce the baseline's value (a change it cannot revert)"
    return "not explained by any one change or pair of changes"


def attribute(changes: Sequence[str], measure: Callable[[frozenset[str]], Values], base: Values, run: Values,
              metrics: Sequence[str], describe: Callable[[str, str], str] | None = None,
              deltas: Mapping[str, float | None] | None = None) -> Attribution:
    """Every question whose gated value differs between `base` and `run` (both hold the compared questions only),
    named with the change that flipped it, and each metric's waterfall. `describe(change, question)` words a
    change for one question (default: its name); `deltas`, the gate's own deltas, which the parts then sum to."""
    words = describe or (lambda c, _q: c)
    got = _Measured(measure)
    out = Attribution()
    for m in metrics:
        for q in base:
            b, r = _value(base, q, m), _value(run, q, m)
            if b is not None and r is not None and not _close(b, r):
                out.lines.append(f"{q}: {m} {_num(b)} → {_num(r)} {_cause(q, m, b, r, changes, got, words)}")
        out.waterfall[m] = _waterfall(m, changes, got, base, run, (deltas or {}).get(m))
    out.replays = len(got.seen)
    return out


def _mean(values: Values, ids: Sequence[str], m: str) -> Fraction:
    return sum((Fraction(_value(values, q, m) or 0.0) for q in ids), Fraction(0)) / max(1, len(ids))


def _waterfall(m: str, changes: Sequence[str], got: _Measured, base: Values, run: Values,
               target: float | None = None) -> list[Part]:
    ids = [q for q in base if _value(base, q, m) is not None and _value(run, q, m) is not None]
    replayed_run, replayed_base = got(frozenset()), got(frozenset(changes))
    delta = _mean(run, ids, m) - _mean(base, ids, m)
    parts: list[Part] = []
    total = Fraction(0)
    for c in changes:
        loo = got(frozenset([c]))
        part = _mean(replayed_run, ids, m) - _mean(loo, ids, m)
        total += part
        moved = tuple(q for q in ids if not _close(_value(replayed_run, q, m), _value(loo, q, m)))
        parts.append(Part(c, float(part), moved))
    replayed = _mean(replayed_run, ids, m) - _mean(replayed_base, ids, m)
    parts.append(Part(INTERACTION, float(replayed - total)))
    parts.append(Part(NOT_REPRODUCED, _rest(float(delta - replayed), [p.value for p in parts],
                                            float(delta) if target is None else target)))
    return parts


def _rest(value: float, before: list[float], target: float) -> float:
    """The last part, nudged by at most a few units in the last place so that the parts, summed in order as a
    reader sums them, give the delta the gate printed to the last digit (the rational sum is exact already)."""
    if abs(target - sum(before) - value) < 1e-12:  # only rounding between them: take the difference itself
        value = target - sum(before)
    for _ in range(8):
        got = sum(before) + value
        if got == target:
            break
        value = math.nextafter(value, math.inf if got < target else -math.inf)
    return value
