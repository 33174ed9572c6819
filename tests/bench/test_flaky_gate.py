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


def test_the_committed_simulation_holds_the_false_alarm_rate_at_every_measured_setting() -> None:
    import json

    from nomad_eval.base.paths import REPO

    result = json.loads((REPO / "bench" / "results" / "flaky_gate.json").read_text())
    measured = {k: v for k, v in result["unchanged"].items() if not k.endswith("repeats 1")}
    assert len(measured) >= 8 and all(v["pairs"] >= 1000 and v["high"] <= 0.07 for v in measured.values())
    # One repeat on both sides never reads as a regression: it cannot tell.
    assert "regression" not in result["unchanged"]["15 at p=0.5, repeats 1"]["verdicts"]
    assert result["power"]["6 made wrong, repeats 5"]["rate"] >= 0.8
    assert result["power"]["6 made flaky, repeats 5"]["rate"] >= 0.8
    # repeats=auto: the same false-alarm bound and the power on lost questions with under half the run's calls.
    auto = result["unchanged"]["15 at p=0.5, repeats auto"]
    assert auto["calls"]["run"] <= 0.5 * result["unchanged"]["15 at p=0.5, repeats 5"]["calls"]["run"]
    assert result["power"]["6 made wrong, repeats auto"]["rate"] >= 0.8
