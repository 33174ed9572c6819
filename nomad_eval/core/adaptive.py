"""The `repeats=auto` loop: rounds of answers, each round asking again only the questions core/sequential.py has
not settled, until none is left, each reached `most`, or the model-call budget is spent."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from nomad_eval.core.sequential import Rule, expected_calls, pass_sequence, settled
from nomad_eval.records import Case


@dataclass
class Tally:
    """One question's answers so far: passes of the answers judged, calls asked (an infrastructure failure or an
    unjudged answer is a call without an outcome), and why it stopped."""

    passes: int = 0
    answers: int = 0
    asked: int = 0
    why: str | None = None

    def interval(self, alpha: float) -> tuple[float, float]:
        return pass_sequence(self.passes, self.answers, alpha)


class PlannedCalls(TypedDict):
    """tier=plan's `calls` figure (plan.json)."""

    questions: int
    auto_calls: float
    auto_calls_sd: float
    fixed_repeats: int
    fixed_calls: int


# One round's asks, (question key, repeat) each, answered in order: True/False passed, None no outcome.
Ask = Callable[[list[tuple[str, int]]], list[bool | None]]


def ask_until_settled(keys: Sequence[str], base: Mapping[str, tuple[int, int]], ask: Ask, rule: Rule,
                      budget: int | None = None) -> dict[str, Tally]:
    """Each question's tally after the loop. `base`: the baseline's (passes, answers) per key (a key it lacks has
    no reference); `budget`: the most calls in all (None: `most` per question is the only bound)."""
    tallies = {k: Tally() for k in keys}
    spent = 0
    while True:
        for k, t in tallies.items():
            if t.why is None:
                t.why = settled(rule, base.get(k), t.passes, t.answers) or \
                    ("repeats.max" if t.asked >= rule.most else None)
        open_ = [k for k in keys if tallies[k].why is None]
        if budget is not None and spent + len(open_) > budget:
            for k in open_[max(0, budget - spent):]:
                tallies[k].why = "model-call budget spent"
            open_ = open_[:max(0, budget - spent)]
        if not open_:
            return tallies
        outcomes = ask([(k, tallies[k].asked) for k in open_])
        spent += len(open_)
        for k, passed in zip(open_, outcomes, strict=True):
            t = tallies[k]
            t.asked += 1
            if passed is not None:
                t.answers += 1
                t.passes += int(passed)


def base_tallies(passed: Mapping[str, Sequence[bool | None]]) -> dict[str, tuple[int, int]]:
    """The baseline's (passes, judged answers) per question key, from each key's pass outcomes."""
    return {k: (sum(1 for p in ps if p), sum(1 for p in ps if p is not None)) for k, ps in passed.items()}


def by_key(cases: Sequence[Case]) -> dict[str, tuple[int, int]]:
    """The (passes, judged answers) of each `mode:id` question of a side's case records."""
    grouped: dict[str, list[bool | None]] = {}
    for c in cases:
        grouped.setdefault(f"{c.mode}:{c.id}", []).append(c.passed)
    return base_tallies(grouped)


def planned_calls(rule: Rule, cases: Sequence[Case], seed: int, budget: float | None = None) -> PlannedCalls:
    """What a verdict against this baseline costs under repeats=auto if nothing changed (simulated with each
    question's baseline pass rate), beside fixed repeats at the baseline's own count: tier=plan's figure.
    `budget`: calls per question on average (repeats_budget)."""
    ref = by_key(cases)
    cap = None if budget is None else int(budget * len(ref))
    mean, sd = expected_calls(rule, list(ref.values()), seed=seed, budget=cap)
    repeats = max((n for _, n in ref.values()), default=1)
    return {"questions": len(ref), "auto_calls": round(mean, 1), "auto_calls_sd": round(sd, 1),
            "fixed_repeats": repeats, "fixed_calls": repeats * len(ref)}
