from __future__ import annotations

from nomad_eval.gate.floors import floor_rows
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
    m = {"recall@5": 0.8, "nonEmptyRateOnRefusal": 0.5, "hit@5": None}
    (ok,) = floor_rows(m, {"recall@5": 0.7})
    assert not ok.broken and ok.reason == "recall@5 0.8000 ≥ 0.7"
    (low,) = floor_rows(m, {"recall@5": 0.85})
    assert low.broken and low.reason == "recall@5 0.8000 < 0.85"
    (ceiling,) = floor_rows(m, {"nonEmptyRateOnRefusal": 0.4})  # lower is better: above the ceiling breaks it
    assert ceiling.broken and ceiling.reason == "nonEmptyRateOnRefusal 0.5000 > 0.4"
    assert "does not report" in floor_rows(m, {"ndcg@7": 0.1})[0].reason
    (null,) = floor_rows(m, {"hit@5": 0.5})
    assert null.broken and "could not be measured" in null.reason  # null never passes
    (judged,) = floor_rows(m, {"judge.faithfulness": 0.9}, {"faithfulness": 0.95})
    assert not judged.broken
