"""tier=plan with compare.tolerance: the questions needed are planned for the one tolerance the gate will use."""

from __future__ import annotations

import random

from nomad_eval.core.planning import plan_rows
from tests.written import records


def test_plan_uses_the_one_tolerance_for_every_metric() -> None:
    rng = random.Random(3)
    cases = [{"id": f"q{i}", "relevant_doc_ids": [f"d{i}"], "passed": None,
              "metrics": {"recall@5": rng.choice([0.0, 1.0, 1.0, 1.0])}} for i in range(60)]
    own = plan_rows(records(cases), ["recall@5"], 0.5)[0]
    loose = plan_rows(records(cases), ["recall@5"], 0.5, tolerance=0.05)[0]
    assert own["tolerance"] == 0.02 and loose["tolerance"] == 0.05
    assert loose["questions_for_tolerance"] < own["questions_for_tolerance"]  # a wider tolerance needs fewer
