from __future__ import annotations

import pytest

from nomad_eval.compare.bootstrap import paired_bootstrap_ci
from nomad_eval.compare.gate import gate_failures
from nomad_eval.metrics.registry import REGISTRY, spec_for


def test_registry_directions_and_tolerances() -> None:
    assert spec_for("recall@5") is REGISTRY["recall"]
    assert spec_for("recall@5").regressed(0.90, 0.87)  # type: ignore[union-attr]
    assert not spec_for("recall@5").regressed(0.90, 0.885)  # type: ignore[union-attr]
    lower = spec_for("nonEmptyRateOnRefusal")
    assert lower is not None and lower.regressed(0.2, 0.25) and not lower.regressed(0.2, 0.1)
    assert spec_for("no_such_metric") is None


def test_bootstrap_interval_brackets_the_shift() -> None:
    base = [0.0, 1.0] * 20
    assert paired_bootstrap_ci(base, base) == (0.0, 0.0)
    lo, hi = paired_bootstrap_ci(base, [b + 0.1 for b in base])  # type: ignore[misc]
    assert lo == pytest.approx(0.1) and hi == pytest.approx(0.1)
    worse = [0.0] * 40
    lo, hi = paired_bootstrap_ci(base, worse)  # type: ignore[misc]
    assert lo < -0.5 < hi < 0
    assert paired_bootstrap_ci([1.0], [0.0]) is None


def test_gate_floors() -> None:
    m = {"recall@5": 0.8, "nonEmptyRateOnRefusal": 0.5}
    assert gate_failures(m, {"recall@5": 0.7}) == []
    (msg,) = gate_failures(m, {"recall@5": 0.85})
    assert "recall@5" in msg and "no prompt work fixes missing context" in msg
    assert gate_failures(m, {"nonEmptyRateOnRefusal": 0.4})  # lower is better: above the ceiling fails
    assert "does not report" in gate_failures(m, {"ndcg@7": 0.1})[0]
