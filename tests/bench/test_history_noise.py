"""Noise from question history under simulation (bench/history_noise.py): a few pairs at one repeat a side with
earlier runs reach a verdict, and the committed run holds the false-alarm rate with history at every setting."""

from __future__ import annotations

import json

from bench.flaky_gate import suite
from bench.history_noise import shares
from nomad_eval.base.paths import REPO


def test_a_few_pairs_with_history_reach_a_verdict_instead_of_cannot_tell() -> None:
    s = suite()
    bare, told = shares(s, s, 0, 5, seed=3, start=0), shares(s, s, 2, 5, seed=3, start=0)
    assert bare["pairs"] == told["pairs"] == 5 and told["cannot_tell"] == 0 and told["failed"] <= 1


def test_the_committed_simulation_holds_the_false_alarm_rate_with_history() -> None:
    result = json.loads((REPO / "bench" / "results" / "history_noise.json").read_text())
    with_history = {k: v for k, v in result["unchanged"].items() if not k.endswith("H=0")}
    assert len(with_history) >= 8
    assert all(v["pairs"] >= 1000 and v["high"] <= 0.07 and v["cannot_tell"] == 0 for v in with_history.values())
