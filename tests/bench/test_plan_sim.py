"""tier=plan's detectable change is what the committed simulation (bench/plan_sim.py) checked."""

from __future__ import annotations

import json

from nomad_eval.base.paths import REPO
from nomad_eval.core.planning import plan_rows
from tests.written import records


def test_the_committed_simulation_checked_plans_current_figure() -> None:
    result = json.loads((REPO / "bench" / "results" / "plan_sim.json").read_text())
    cases = json.loads((REPO / result["baseline"]).read_text())["cases"]
    row = next(r for r in plan_rows(records(cases), result["gated"], 0.5) if r["metric"] == result["metric"])
    assert abs(row["mde"] - result["plan_detectable"]) < 1e-12  # re-run bench/plan_sim.py when this moves
    assert result["runs"] >= 1000 and 0.75 <= result["rate"] <= 0.85 and result["met"]
