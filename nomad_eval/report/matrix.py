"""The model capability matrix as a table: each model's row assembled from a sweep's jobs, written as json/md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from rich.table import Table

from nomad_eval.base.atomic import JsonObject, write_atomic
from nomad_eval.base.console import console
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


def matrix_row(report: JsonObject) -> MatrixRow:
    """The row of a generation run's report.json, as read."""
    m = report["metrics"]
    o, e = m.get("oracle.correctness"), m.get("e2e.correctness")
    ident = report["identity"]
    mock = (report.get("details") or {}).get("mock_line") or {}
    return MatrixRow(
        model=ident["model"], fingerprint=ident["fingerprint"], goldens_hash=ident["goldens_hash"],
        suite=ident["suite"], oracle=o, e2e=e, gap=None if o is None or e is None else o - e,
        refusal_recall=m.get("e2e.refusal_recall"), false_refusal_rate=m.get("e2e.false_refusal_rate"),
        leakage_rate=m.get("e2e.leakage_rate"),
        groundedness=m.get("e2e.groundedness"),
        mock_oracle=(mock.get("oracle") or {}).get("correctness"),
        mock_e2e=(mock.get("e2e") or {}).get("correctness"),
    )


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
