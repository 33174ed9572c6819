from __future__ import annotations

from nomad_eval.core.gate import gate_failures
from nomad_eval.metrics.registry import REGISTRY, spec_for


def test_registry_directions_and_tolerances() -> None:
    assert spec_for("recall@5") is REGISTRY["recall"]
    assert spec_for("recall@5").regressed(0.90, 0.87)  # type: ignore[union-attr]
    assert not spec_for("recall@5").regressed(0.90, 0.885)  # type: ignore[union-attr]
    lower = spec_for("nonEmptyRateOnRefusal")
    assert lower is not None and lower.regressed(0.2, 0.25) and not lower.regressed(0.2, 0.1)
    assert spec_for("no_such_metric") is None


def test_tolerance_is_robust_to_float_error_and_to_a_zero_baseline() -> None:
    recall = spec_for("recall@5")
    assert recall is not None
    assert 0.9 - 0.88 > 0.02  # the float error the gate must not trip over
    assert not recall.regressed(0.9, 0.88)  # a drop of exactly the tolerance is allowed
    assert recall.regressed(0.9, 0.8799)
    rel = spec_for("prompt_token_error")
    assert rel is not None and rel.tolerance_kind == "rel"
    # Against a baseline of 0 a relative tolerance keeps a floor: a rise of 0.01 is not "any increase".
    assert not rel.regressed(0.0, 0.01)


def test_gate_floors() -> None:
    m = {"recall@5": 0.8, "nonEmptyRateOnRefusal": 0.5}
    assert gate_failures(m, {"recall@5": 0.7}) == []
    (msg,) = gate_failures(m, {"recall@5": 0.85})
    assert "recall@5" in msg and "no prompt work fixes missing context" in msg
    assert gate_failures(m, {"nonEmptyRateOnRefusal": 0.4})  # lower is better: above the ceiling fails
    assert "does not report" in gate_failures(m, {"ndcg@7": 0.1})[0]
