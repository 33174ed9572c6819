"""Attribution by replay over per-question values: leave-one-out, one change applied to the baseline, pairs, and
a waterfall whose parts, interaction and unreproduced rest add up to the delta."""

from __future__ import annotations

import math
from fractions import Fraction

from nomad_eval.core.attribution import INTERACTION, NOT_REPRODUCED, Values, attribute

BASE: Values = {"q1": {"recall@5": 1.0}, "q2": {"recall@5": 1.0}, "q3": {"recall@5": 0.0}, "q4": {"recall@5": 1.0}}


def _measure(reverted: frozenset[str]) -> Values:
    """q1 breaks with `chunks` alone; q2 only with `glossary` and `doc` together (an interaction); q3 improves with
    `doc`; q4 broke for a reason no change explains (the replay keeps its baseline value)."""
    q1 = 1.0 if "chunks" in reverted else 0.0
    q2 = 1.0 if {"glossary", "doc"} & reverted else 0.0
    q3 = 0.0 if "doc" in reverted else 1.0
    return {"q1": {"recall@5": q1}, "q2": {"recall@5": q2}, "q3": {"recall@5": q3}, "q4": {"recall@5": 1.0}}


RUN: Values = {"q1": {"recall@5": 0.0}, "q2": {"recall@5": 0.0}, "q3": {"recall@5": 1.0}, "q4": {"recall@5": 0.0}}


def test_each_flip_is_named_with_its_change_and_the_waterfall_adds_up() -> None:
    found = attribute(["chunks", "glossary", "doc"], _measure, BASE, RUN, ["recall@5"])
    lines = dict(line.split(": ", 1) for line in found.lines)
    assert lines["q1"] == "recall@5 1 → 0 because chunks (reverting it alone restores it)"
    assert lines["q2"] == ("recall@5 1 → 0 interaction of glossary and doc (each is needed: reverting any one alone "
                           "restores it)")
    assert lines["q3"] == "recall@5 0 → 1 because doc (reverting it alone restores it)"
    assert lines["q4"].startswith("recall@5 1 → 0 not explained: the replay does not reproduce")
    parts = {p.change: p for p in found.waterfall["recall@5"]}
    assert parts["chunks"].value == -0.25 and parts["chunks"].questions == ("q1",)
    assert parts[NOT_REPRODUCED].value == -0.25  # q4
    total = sum(Fraction(p.value) for p in parts.values())
    assert total == Fraction(-2, 4)  # the delta over four questions: (1 - 3) / 4
    assert math.isclose(sum(p.value for p in parts.values()), -0.5)
    assert INTERACTION in parts


def test_interacting_changes_are_found_by_pairs() -> None:
    def both(reverted: frozenset[str]) -> Values:
        return {"q": {"mrr@5": 1.0 if {"a", "b"} <= reverted else 0.0}}

    found = attribute(["a", "b", "c"], both, {"q": {"mrr@5": 1.0}}, {"q": {"mrr@5": 0.0}}, ["mrr@5"])
    assert found.lines == ["q: mrr@5 1 → 0 interaction of a and b (reverting both restores it, either alone does "
                           "not)"]
    parts = {p.change: p.value for p in found.waterfall["mrr@5"]}
    assert parts["a"] == parts["b"] == 0.0 and parts[INTERACTION] == -1.0
