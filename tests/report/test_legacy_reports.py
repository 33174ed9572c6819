"""Reports of schema version 1 (every tier's fields flat beside the envelope) read as version 2 (the envelope and
`details`), value for value: the committed baselines, the bench fixture, and a version-1 report of each kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nomad_eval.base.paths import REPO
from nomad_eval.report.baseline import load_baseline
from nomad_eval.report.details import AppDetails, CauseCounts, GenerationDetails, PositionDetails, RetrievalDetails
from nomad_eval.report.schema import SCHEMA_VERSION, Report

COMMITTED = sorted([*(REPO / "baselines").glob("*/*.json"), *(REPO / "bench" / "fixtures").glob("*baseline*.json")])
ENVELOPE = ("tier", "status", "error", "identity", "overrides", "sweep_id", "config", "system", "metrics",
            "intervals", "metrics_by_tag", "intervals_by_tag", "counts", "warnings", "subject", "upstream", "gate",
            "provenance", "timings")


def _holds(old: Any, new: Any) -> bool:
    """Every value the file holds is read unchanged (fields added since read as their defaults)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _holds(v, new[k]) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(map(_holds, old, new))
    return bool(old == new)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_baseline_reads_with_the_same_values(path: Path) -> None:
    raw = json.loads(path.read_text())["report"]
    assert raw["schema_version"] == 1  # written before details: this test is the reader's
    report = load_baseline(path).report
    assert report.schema_version == SCHEMA_VERSION == 2
    dumped = report.model_dump(mode="json")
    assert all(_holds(raw[k], dumped[k]) for k in ENVELOPE if k in raw)
    assert isinstance(report.details, RetrievalDetails)
    assert report.model_dump(mode="json")["details"]["separation"] == raw["separation"]
    assert report.details.ablation == raw["ablation"]
    again = Report.model_validate_json(report.model_dump_json())  # version 2 reads back as itself
    assert again == report


def _v1(tier: str, **fields: Any) -> dict[str, Any]:
    flat = {"separation": [], "ablation": {}, "decomposition": {}, "mock_line": {}, "unstable": [], "infra": [],
            "chars_per_token": None, "judges": {}, "judge_corrected": {}, "position": {}, "position_curve": None,
            "attacks": [], "causes": {}, "sizes": {}, "served_index": {}, "repeats_reason": None}
    return {"schema_version": 1, "tier": tier, "metrics": {"e2e.correctness": 0.5}} | flat | fields


def test_a_version_1_generation_report_moves_its_fields_under_details() -> None:
    decomposition = {"oracle": 0.9, "e2e": 0.5, "noretrieval": 0.1, "retrieval_gap": 0.4, "rag_lift": 0.4,
                     "diagnosis": ["work on retrieval"]}
    judges = {"e2e.faithfulness": {"rubric": "faithfulness-v2", "n": 3, "mean": 0.5}}
    raw = _v1("generation", decomposition=decomposition, judges=judges, unstable=["e2e:q1"], chars_per_token=3.5,
              infra=[{"key": "e2e:q2", "repeat": 0, "reason": "timeout"}], repeats_reason="repeats=1 as set",
              mock_line={"e2e": {"correctness": 0.75}})
    report = Report.model_validate(raw)
    d = report.details
    assert isinstance(d, GenerationDetails) and report.schema_version == 2
    assert d.decomposition is not None and d.decomposition.model_dump() == decomposition
    assert d.judges == judges and d.unstable == ["e2e:q1"] and d.chars_per_token == 3.5
    assert [x.model_dump() for x in d.infra] == raw["infra"] and d.repeats_reason == "repeats=1 as set"
    assert d.mock_line == {"e2e": {"correctness": 0.75}} and report.metrics == {"e2e.correctness": 0.5}
    # An empty decomposition (or rank table) was version 1's "not measured" (not every mode, no e2e).
    empty = Report.model_validate(_v1("generation")).generation_part()
    assert empty.decomposition is None and empty.position is None and empty.causes == CauseCounts()
    by_rank = {"1": {"n": 4, "correctness": 0.5}}  # a rank row from before intervals
    old = Report.model_validate(_v1("generation", position={"by_rank": by_rank, "context_recall": 0.9,
                                                            "retrieved_but_ignored_rate": None,
                                                            "retrieved_but_ignored": False}))
    row = old.generation_part().position.by_rank["1"]  # type: ignore[union-attr]
    assert (row.n, row.correctness, row.low, row.method) == (4, 0.5, None, "wilson")


def test_a_version_1_app_report_is_told_from_a_generation_one_by_its_pipeline() -> None:
    share = {"value": 0.5, "count": 2, "n": 4, "low": 0.15, "high": 0.85, "method": "wilson"}
    served = {"passages": 4, "current": share, "stale": share, "foreign": share | {"value": 0.0, "count": 0},
              "stale_documents": {"d1": 2}, "foreign_documents": {}}
    identity = {"fingerprint": "f", "goldens_hash": "g", "suite": "s", "embedder": "(the app's own)",
                "pipeline": "app:http"}
    report = Report.model_validate(_v1("generation", identity=identity, served_index=served, unstable=["e2e:q"]))
    assert isinstance(report.details, AppDetails) and report.tier == "generation"
    assert report.details.served_index is not None and report.answer_part().unstable == ["e2e:q"]
    assert report.details.served_index == served


def test_a_version_1_position_report_keeps_its_curve() -> None:
    curve = {"passages": 2, "questions": 1, "points": [
        {"position": p, "n": 1, "correctness": 0.5, "low": 0.1, "high": 0.9, "method": "wilson", "mock": None}
        for p in (1, 2)], "best": 1, "worst": 2, "delta": 0.0, "delta_low": None, "delta_high": None,
        "p_value": None, "test": None, "skipped": {}}
    report = Report.model_validate(_v1("position", position_curve=curve, chars_per_token=3.0))
    assert isinstance(report.details, PositionDetails) and report.details.chars_per_token == 3.0
    assert report.details.curve is not None and report.details.curve.model_dump() == curve


def test_a_failed_or_detail_less_version_1_report_reads_without_details() -> None:
    failed = Report.model_validate(_v1("generation", status="failed", error="boom"))
    other = Report.model_validate(_v1("compare"))
    assert failed.details is None and other.details is None and failed.error == "boom"
    assert other.retrieval_part() == RetrievalDetails()  # a view of another kind renders nothing of it


def test_a_version_1_field_in_a_current_report_is_refused_not_dropped() -> None:
    with pytest.raises(ValueError, match="judges: a version-1 field"):
        Report.model_validate({"tier": "generation", "judges": {"e2e.faithfulness": {}}})
