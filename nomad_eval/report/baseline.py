"""Baselines filed under the corpus fingerprint: baselines/<fingerprint>/<tier>[-<variant>].json."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.report.io import read_jsonl, read_report, write_atomic
from nomad_eval.report.schema import Report
from nomad_eval.report.upstream import looks_upstream, upstream_baseline


class Baseline(BaseModel):
    schema_version: int = 2  # 2: cases keep repeat and relevant documents, so compare rebuilds questions
    promoted_from: str
    promoted_at: str
    report: Report
    cases: list[dict[str, Any]]


def baseline_path(root: Path, fingerprint: str, tier: str, variant: str | None = None) -> Path:
    """A tier with several variants (generation: one per mode) files each under its own name."""
    name = f"{tier}-{variant}.json" if variant else f"{tier}.json"
    return root / fingerprint / name


def default_variant(report: Report) -> str | None:
    return report.identity.mode if report.tier == "generation" and report.identity else None


def load_run(path: Path) -> tuple[Report, list[dict[str, Any]] | None]:
    """A run directory or its report.json, with the per-case records when they sit beside it."""
    report_path = path if path.suffix == ".json" else path / "report.json"
    report = read_report(report_path)
    cases_path = report_path.parent / "cases.jsonl"
    return report, read_jsonl(cases_path) if cases_path.exists() else None


def _case_summary(c: dict[str, Any]) -> dict[str, Any]:
    # Everything compare needs to rebuild per-question outcomes: repeats, and documents for clustering.
    keep = ("id", "tags", "passed", "unstable", "metrics", "mode", "repeat", "relevant_doc_ids", "expect_refusal")
    return {k: c[k] for k in keep if k in c}


def promote(run: Path, root: Path, variant: str | None = None) -> Path:
    if (run / "matrix.json").exists():  # a matrix sweep: its table is the baseline
        rows = json.loads((run / "matrix.json").read_text())["rows"]
        fps = {r["fingerprint"] for r in rows}
        if len(fps) != 1:
            raise NomadError(f"{run}: matrix rows span fingerprints {sorted(fps)}; promote one corpus at a time", 2)
        target = baseline_path(root, fps.pop(), "matrix")
        write_atomic(target, json.dumps({"promoted_from": str(run), "rows": rows}, indent=1))
        return target
    report, cases = load_run(run)
    if report.status != "ok" or report.identity is None:
        raise NomadError(f"{run}: a failed run cannot become a baseline ({report.error})", 2)
    target = baseline_path(root, report.identity.fingerprint, report.tier, variant or default_variant(report))
    base = Baseline(
        promoted_from=str(run), promoted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        report=report, cases=[_case_summary(c) for c in cases or []],
    )
    write_atomic(target, base.model_dump_json(indent=1))
    return target


def load_baseline(path: Path) -> Baseline:
    """A promoted baseline file, any run's directory or report.json used as one, or upstream NOMAD's baseline
    file (detected by its top-level `meta`; see report/upstream.py)."""
    if path.is_dir() or path.name == "report.json":
        report, cases = load_run(path)
        return Baseline(promoted_from=str(path), promoted_at="", report=report, cases=cases or [])
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise NomadError(f"no baseline at {path}; promote one with: python -m nomad_eval tier=promote "
                         "promote.run=<run dir>", 2) from None
    except (ValueError, RecursionError) as exc:  # bad JSON or bytes: unreadable, so not comparable (exit 2)
        raise NomadError(f"{path}: not a valid baseline: not JSON ({exc})", 2) from None
    if looks_upstream(raw):  # upstream NOMAD's baselines/<fingerprint>/retrieval.json, converted to ours
        report, cases = upstream_baseline(raw, path)
        return Baseline(promoted_from=f"upstream NOMAD baseline {path}", promoted_at=report.provenance.created
                        if report.provenance else "", report=report, cases=cases)
    try:
        return Baseline.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        invalid = InvalidInput([Defect(str(path), None, f"not a valid baseline: '{loc}': {first['msg']}")])
        invalid.exit_code = 2  # an unreadable baseline is "not comparable", never a regression
        raise invalid from None
