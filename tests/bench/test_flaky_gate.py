"""The measuring instrument of the generation gate (bench/flaky_gate.py): simulated records of answers that vary
go through compare_questions itself, and a few pairs already show the rule's behaviour."""

from __future__ import annotations

import numpy as np

from bench.flaky_gate import cases, changed, failing_share, gate, suite


def test_the_simulated_suite_has_the_issues_shape_and_its_records_reach_the_gate() -> None:
    s = suite()
    assert s.size == 60 and int((s.p == 0.5).sum()) == 15
    base = cases(np.random.default_rng(0), s, 3)
    assert len(base) == 180 and {c["mode"] for c in base} == {"e2e"}
    v = gate(base, cases(np.random.default_rng(1), s, 3))
    assert v.common == 60 and {m.name for m in v.metrics if m.gated} >= {"e2e.correctness", "e2e.instability"}


def test_an_unchanged_flaky_system_rarely_fails_and_six_questions_lost_are_found() -> None:
    s = suite()
    quiet = failing_share(s, s, 3, 25, seed=7)
    assert quiet["failed"] <= 2 and quiet["pairs"] == 25 and quiet["low"] <= quiet["rate"] <= quiet["high"]
    lost = failing_share(s, changed(s, "wrong", 6), 5, 10, seed=7)
    assert lost["failed"] >= 7 and lost["fired"]
