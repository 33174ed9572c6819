"""Inputs that are not what they claim: special files named as a baseline or run, values outside a measure's
range. Each is refused by name with exit 2 (not comparable), quickly, never a hang or a verdict."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nomad_eval.base.errors import NomadError
from nomad_eval.gate.store import promote
from nomad_eval.report.baseline import load_baseline, load_run
from nomad_eval.report.schema import Identity, Report

IDENTITY = Identity(fingerprint="f" * 16, goldens_hash="h", suite="core", embedder="e", pipeline="p",
                    measures=["@5"])
REPORT = Report(tier="retrieval", identity=IDENTITY, metrics={"recall@5": 0.5})
CASE = {"id": "q1", "relevant_doc_ids": ["d"], "metrics": {"recall@5": 1.0}}


def _refused_within(seconds: float, read: Callable[[], object]) -> NomadError:
    """Run `read` in a thread: a reader that blocks (a FIFO with no writer) fails the test instead of hanging it."""
    caught: list[BaseException] = []

    def target() -> None:
        try:
            read()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            caught.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the reader blocked for {seconds} s"
    assert caught and isinstance(caught[0], NomadError), caught
    return caught[0]


def test_a_fifo_as_baseline_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    exc = _refused_within(5, lambda: load_baseline(fifo))
    assert exc.exit_code == 2 and f"{fifo}: a FIFO, not a file" in str(exc)


def test_dev_zero_as_baseline_is_refused_without_reading_it() -> None:
    exc = _refused_within(5, lambda: load_baseline(Path("/dev/zero")))
    assert exc.exit_code == 2 and "/dev/zero: a device, not a file" in str(exc)


def test_a_fifo_as_cases_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(REPORT.model_dump_json())
    os.mkfifo(tmp_path / "cases.jsonl")
    exc = _refused_within(5, lambda: load_run(tmp_path))
    assert exc.exit_code == 2 and f"{tmp_path / 'cases.jsonl'}" in str(exc) and "a FIFO" in str(exc)


@pytest.mark.parametrize(("metrics", "case_metrics", "named"), [
    ({"recall@5": 7.0}, {"recall@5": 1.0}, "'metrics.recall@5' = 7.0 is outside the range of recall [0, 1]"),
    ({"recall@5": 0.5}, {"recall@5": -0.5}, "cases[0]: 'metrics.recall@5' = -0.5 is outside the range of recall"),
    ({"returned@5": -1.0}, {}, "'metrics.returned@5' = -1.0 is outside the range of returned [0, inf]"),
])
def test_baseline_values_outside_their_range_are_refused(tmp_path: Path, metrics: dict[str, float],
                                                         case_metrics: dict[str, float], named: str) -> None:
    report = REPORT.model_copy(update={"metrics": metrics})
    path = tmp_path / "retrieval.json"
    path.write_text(json.dumps({"promoted_from": "x", "promoted_at": "", "report": report.model_dump(mode="json"),
                                "cases": [{**CASE, "metrics": case_metrics}]}))
    with pytest.raises(NomadError) as exc:
        load_baseline(path)
    assert exc.value.exit_code == 2 and str(path) in str(exc.value) and named in str(exc.value)


def test_a_run_with_a_value_outside_its_range_is_refused(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text(REPORT.model_copy(update={"metrics": {"ndcg@5": 1.5}}).model_dump_json())
    with pytest.raises(NomadError) as exc:
        load_run(tmp_path)
    assert f"{tmp_path / 'report.json'}: not a valid report: 'metrics.ndcg@5' = 1.5" in str(exc.value)


ROW = {"model": "x", "fingerprint": "f" * 16, "goldens_hash": "h", "suite": "core", "oracle": 1.0, "e2e": 0.5,
       "gap": 0.5, "refusal_recall": None, "false_refusal_rate": None, "leakage_rate": None, "groundedness": None}


@pytest.mark.parametrize(("table", "named"), [
    ({"rows": []}, "'rows': List should have at least 1 item"),
    ([ROW], "'(the whole file)': Input should be an object"),
    ({"rows": [{**ROW, "oracle": "0.9"}]}, "'rows.0.oracle': Input should be a valid number"),
    ({"rows": [{**ROW, "e2e": 7.0}]}, "'rows.0.e2e': Input should be less than or equal to 1"),
    ({"rows": [{**ROW, "extra": 1}]}, "'rows.0.extra': Extra inputs are not permitted"),
    ({"rows": [{k: v for k, v in ROW.items() if k != "model"}]}, "'rows.0.model': Field required"),
])
def test_promote_files_only_a_matrix_of_the_known_shape(tmp_path: Path, table: object, named: str) -> None:
    (tmp_path / "matrix.json").write_text(json.dumps(table))
    with pytest.raises(NomadError) as exc:
        promote(tmp_path, tmp_path / "baselines")
    assert exc.value.exit_code == 2 and f"{tmp_path / 'matrix.json'}: not a matrix table: {named}" in str(exc.value)
    assert not (tmp_path / "baselines").exists()
    (tmp_path / "matrix.json").write_text(json.dumps({"rows": [ROW]}))
    assert promote(tmp_path, tmp_path / "baselines") == tmp_path / "baselines" / ("f" * 16) / "matrix.json"


def test_promote_refuses_fewer_cases_than_the_report_counts(tmp_path: Path) -> None:
    report = REPORT.model_copy(update={"counts": {"goldens": 3}})
    (tmp_path / "report.json").write_text(report.model_dump_json())
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({**CASE, "id": f"q{i}"}) + "\n" for i in range(2)))
    with pytest.raises(NomadError) as exc:
        promote(tmp_path, tmp_path / "baselines")
    assert exc.value.exit_code == 2 and "cases.jsonl holds 2 case(s) where report.json counts 3" in str(exc.value)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({**CASE, "id": f"q{i}"}) + "\n" for i in range(3)))
    assert promote(tmp_path, tmp_path / "baselines").exists()
