"""Reading a run's report back, with errors that name the file (exit 2: a bad path is never a regression)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from nomad_eval.base.atomic import read_input, read_jsonl, write_atomic, write_jsonl
from nomad_eval.base.errors import NomadError, first_error
from nomad_eval.report.schema import Report

__all__ = ["read_jsonl", "read_report", "write_atomic", "write_jsonl"]


def read_report(path: Path) -> Report:
    if path.is_dir():
        path = path / "report.json"
    try:
        return Report.model_validate_json(read_input(path))
    except FileNotFoundError:
        # Exit 2, like every other "cannot be compared": CI must not read a mistyped path as a regression.
        raise NomadError(f"{path}: no report.json here (name a run directory or its report.json)", 2) from None
    except OSError as exc:  # a folder named report.json, no permission
        raise NomadError(f"{path}: cannot read the report: {exc.strerror or exc}", 2) from None
    except ValidationError as exc:  # bad JSON (the message gives line and column), bytes, or a wrong key
        raise NomadError(f"{path}: not a valid report: {first_error(exc)}", 2) from None
