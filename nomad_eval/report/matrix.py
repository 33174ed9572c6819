"""The model capability matrix as a table: each model's row assembled from a sweep's jobs, written as json/md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from rich.table import Table

from nomad_eval.base.atomic import write_atomic
from nomad_eval.base.console import console
from nomad_eval.base.json_fields import fields, number
from nomad_eval.report.markdown import fmt

ROW_FILE = "matrix_row.json"
COLUMNS = ("oracle", "e2e", "gap", "refusal_recall", "false_refusal_rate", "leakage_rate", "groundedness")
# The last four are e2e figures; the headers say so, since oracle groundedness can differ a lot.
HEADERS = ("oracle", "e2e", "gap", "e2e refusal_recall", "e2e false_refusal_rate", "e2e leakage_rate",
           "e2e groundedness")


class MatrixRow(TypedDict):
    """One model's row of the matrix: matrix_row.json, beside the generation report it comes from."""

    model: str
    fingerprint: str
    goldens_hash: str
    suite: str
    oracle: float | None
    e2e: float | None
    gap: float | None
    refusal_recall: float | None
    false_refusal_rate: float | None
    leakage_rate: float | None
    groundedness: float | None
    mock_oracle: float | None
    mock_e2e: float | None


def figure(row: MatrixRow, column: str) -> float | None:
    """The row's value in one of COLUMNS (None: not measured)."""
    v = row.get(column)
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def matrix_row(report: Mapping[str, object]) -> MatrixRow:
    """The row of a generation run's report.json, as read."""
    m = fields(report["metrics"])
    o, e = number(m.get("oracle.correctness")), number(m.get("e2e.correctness"))
    ident = fields(report["identity"])
    mock = fields(fields(report.get("details")).get("mock_line"))
    return MatrixRow(
        model=_text(ident["model"]), fingerprint=_text(ident["fingerprint"]),
        goldens_hash=_text(ident["goldens_hash"]), suite=_text(ident["suite"]),
        oracle=o, e2e=e, gap=None if o is None or e is None else o - e,
        refusal_recall=number(m.get("e2e.refusal_recall")), false_refusal_rate=number(m.get("e2e.false_refusal_rate")),
        leakage_rate=number(m.get("e2e.leakage_rate")),
        groundedness=number(m.get("e2e.groundedness")),
        mock_oracle=number(fields(mock.get("oracle")).get("correctness")),
        mock_e2e=number(fields(mock.get("e2e")).get("correctness")),
    )


def _text(v: object) -> str:
    if isinstance(v, str):
        return v
    raise TypeError(f"expected a string in the report's identity, got {type(v).__name__}")


def assemble(dirs: list[Path]) -> list[MatrixRow]:
    rows = [json.loads((d / ROW_FILE).read_text()) for d in dirs if (d / ROW_FILE).exists()]
    return sorted(rows, key=lambda r: r["model"])


def write_matrix(rows: list[MatrixRow], out: Path, quiet: bool = False) -> None:
    write_atomic(out / "matrix.json", json.dumps({"rows": rows}, indent=1))
    head = ["model", *HEADERS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([r["model"], *(fmt(figure(r, c)) for c in COLUMNS)]) + " |" for r in rows]
    write_atomic(out / "matrix.md", "# Model capability matrix\n\n" + "\n".join(lines) + "\n")
    if not quiet:
        t = Table(title="model capability matrix")
        for c in head:
            t.add_column(c)
        for r in rows:
            t.add_row(r["model"], *(fmt(figure(r, c)) for c in COLUMNS))
        console.print(t)
