"""Reading what compare, plan and promote read: a run folder (its report and checked case records), a baseline file
(filed by the gate's store, nomad_eval/gate/store.py), upstream NOMAD's files, and a sweep's matrix table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidationError

from nomad_eval.base.atomic import read_input
from nomad_eval.base.bounded_json import json_problem
from nomad_eval.base.errors import Defect, InvalidInput, NomadError, first_error
from nomad_eval.base.runfolder import check
from nomad_eval.data.golden import json_lines, json_value
from nomad_eval.records import Case, checked, encode, out_of_range
from nomad_eval.records.codec import SUMMARY
from nomad_eval.report.io import read_report
from nomad_eval.report.renamed import renamed_cases, renamed_report
from nomad_eval.report.schema import Report
from nomad_eval.report.upstream import looks_upstream, upstream_baseline


class Baseline(BaseModel):
    schema_version: int = 2  # 2: cases keep repeat and relevant documents, so compare rebuilds questions
    promoted_from: str
    promoted_at: str
    report: Report
    # Read by load_baseline, one record at a time, so a defect names its case; written in the baseline's order.
    cases: Annotated[list[Case], PlainSerializer(lambda cases: [encode(c, SUMMARY) for c in cases])]


def _report_range(report: Report, path: Path) -> None:
    if (problem := out_of_range(report.metrics)) is not None:
        raise InvalidInput([Defect(str(path), None, f"not a valid report: {problem}")], 2)


def read_cases(path: Path) -> list[Case]:
    """A run's cases.jsonl, each line checked as a case record; errors name the file and line (exit 2)."""
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InvalidInput([Defect(str(path), None, f"cannot read: {exc.strerror or exc}")], 2) from None
    rows: list[Case] = []
    for n, line in enumerate(json_lines(raw, str(path), 2), 1):
        if not line.strip():
            continue
        row = json_value(line, str(path), n)
        if isinstance(row, Defect):
            raise InvalidInput([row], 2)
        if isinstance(case := checked(row), str):
            raise InvalidInput([Defect(str(path), n, case)], 2)
        rows.append(case)
    return rows


def load_run(path: Path) -> tuple[Report, list[Case] | None]:
    """A run directory or its report.json, with the per-case records when they sit beside it; or an upstream
    NOMAD retrieval report (or baseline) file, converted with its cases (report/upstream.py). A run folder whose
    files do not match its manifest (two runs mixed, or changed since) is refused, naming the file (exit 2)."""
    report_path = path if path.suffix == ".json" else path / "report.json"
    if report_path.name != "report.json" and (upstream := _upstream_file(report_path)) is not None:
        return upstream
    if report_path.parent.is_dir():
        check(report_path.parent)
    report = read_report(report_path)
    _report_range(report, report_path)
    cases_path = report_path.parent / "cases.jsonl"
    if not cases_path.exists():
        return report, None
    cases = renamed_cases(read_cases(cases_path))  # a run written under a metric's old name reads as the new
    return renamed_report(report, cases), cases


def _upstream_file(path: Path) -> tuple[Report, list[Case]] | None:
    """An upstream file's report and cases, or None when `path` is not one (read_report then says why)."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return upstream_baseline(raw, path) if json_problem(raw) is None and looks_upstream(raw) else None


Rate = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class MatrixRow(BaseModel):
    """One model's row of matrix.json, as report/matrix.py writes it; anything else is not filed."""

    model_config = ConfigDict(extra="forbid", strict=True)
    model: str
    fingerprint: str
    goldens_hash: str
    suite: str
    oracle: Rate | None
    e2e: Rate | None
    gap: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)] | None
    refusal_recall: Rate | None = None
    false_refusal_rate: Rate | None = None
    refusal_correctness: Rate | None = None  # a matrix filed before the refusal measures were split
    leakage_rate: Rate | None
    groundedness: Rate | None
    mock_oracle: Rate | None = None
    mock_e2e: Rate | None = None


class MatrixTable(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    rows: list[MatrixRow] = Field(min_length=1)


def read_matrix(path: Path) -> list[dict[str, Any]]:
    """A sweep's matrix.json, checked row by row (exit 2 naming the file and the field)."""
    try:
        table = MatrixTable.model_validate_json(read_input(path))
    except OSError as exc:
        raise NomadError(f"{path}: cannot read the matrix: {exc.strerror or exc}", 2) from None
    except ValidationError as exc:
        raise InvalidInput([Defect(str(path), None, f"not a matrix table: {first_error(exc)}")], 2) from None
    return [r.model_dump() for r in table.rows]


def load_baseline(path: Path) -> Baseline:
    """A promoted baseline file, any run's directory or report.json used as one, or upstream NOMAD's baseline
    file (detected by its top-level `meta`; see report/upstream.py)."""
    if path.is_dir() or path.name == "report.json":
        report, cases = load_run(path)
        return Baseline(promoted_from=str(path), promoted_at="", report=report, cases=cases or [])
    try:
        raw = json.loads(read_input(path))
    except FileNotFoundError:
        raise NomadError(f"no baseline at {path}; promote one with: python -m nomad_eval tier=promote "
                         "promote.run=<run dir>", 2) from None
    except OSError as exc:  # no permission, or not a file
        raise NomadError(f"{path}: cannot read the baseline: {exc.strerror or exc}; fix its permissions or "
                         "name another with compare.baseline=<file>", 2) from None
    except (ValueError, RecursionError) as exc:  # bad JSON or bytes: unreadable, so not comparable (exit 2)
        raise NomadError(f"{path}: not a valid baseline: not JSON ({exc}); restore it from version control or "
                         "re-promote it", 2) from None
    if (problem := json_problem(raw)) is not None:
        raise NomadError(f"{path}: not a valid baseline: {problem}", 2)
    if looks_upstream(raw):  # upstream NOMAD's baselines/<fingerprint>/retrieval.json, converted to ours
        report, cases = upstream_baseline(raw, path)
        return Baseline(promoted_from=f"upstream NOMAD baseline {path}", promoted_at=report.provenance.created
                        if report.provenance else "", report=report, cases=cases)
    written = raw.get("cases") if isinstance(raw, dict) else None
    try:  # the cases one by one below, so that a defect names its case
        base = Baseline.model_validate({**raw, "cases": []} if isinstance(written, list) else raw)
    except ValidationError as exc:
        raise InvalidInput([Defect(str(path), None, f"not a valid baseline: {first_error(exc)}")], 2) from None
    _report_range(base.report, path)
    cases = renamed_cases([_baseline_case(path, i, row) for i, row in enumerate(written or [])])
    return base.model_copy(update={"cases": cases, "report": renamed_report(base.report, cases)})


def _baseline_case(path: Path, i: int, row: object) -> Case:
    if isinstance(case := checked(row), str):
        raise InvalidInput([Defect(str(path), None, f"cases[{i}]: {case}")], 2)
    return case
