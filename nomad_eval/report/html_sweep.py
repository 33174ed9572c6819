"""Assembles a sweep's report.html: the swept parameters' curves, the model matrix, which retrieval metric
predicts answers, and the jobs. Apart from a run's page (report/html_writer.py), so that one run does not import
the sweep's modules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from nomad_eval.metrics.registry import headline_names
from nomad_eval.report.html import Section, page, question_table, text_list
from nomad_eval.report.html_writer import chart_section
from nomad_eval.report.io import write_atomic
from nomad_eval.report.matrix import MatrixRow, figure
from nomad_eval.report.merge import SweepRow, is_interval_column, with_interval
from nomad_eval.report.svg import Chart, Heatmap, Series

if TYPE_CHECKING:
    from nomad_eval.report.sweep_summary import Predictors


def write_sweep_html(sweep_dir: Path, rows: list[SweepRow], matrix_rows: list[MatrixRow],
                     predictors: Predictors | None = None, best: str | None = None) -> None:
    from nomad_eval.metrics.registry import spec_for

    sections = [Section("Best setting", [text_list([best])])] if best else []

    candidates = headline_names("retrieval", 5) + headline_names("generation", 5, ("e2e", "oracle"))
    metric_cols = [c for c in candidates if any(c in r for r in rows)]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    # The swept parameters: override keys (not metrics, nor a metric's interval columns) whose value differs.
    params = [k for k in keys if k not in ("job", "status", "exit_code", "error") and spec_for(k) is None
              and not is_interval_column(k, keys) and len({str(r.get(k)) for r in rows}) > 1]
    for p in params:
        if all(_is_number(r.get(p)) for r in rows):
            sections.append(chart_section(f"Metrics vs {p}", sweep_curves(rows, p, metric_cols), f"chart-{p}"))
    if matrix_rows:
        from nomad_eval.report.matrix import COLUMNS

        sections.append(chart_section("Model capability matrix", matrix_heatmap(matrix_rows, COLUMNS), "chart-matrix"))
    if predictors:
        from nomad_eval.report.sweep_summary import predictor_lines

        sections.append(Section("Which retrieval metric predicts answers (Kendall τ, 95% interval)",
                                [text_list(predictor_lines(predictors))]))
    cols = ["job", "status", *params, *metric_cols, "error"]

    def cell(v: Any) -> Any:
        return f"{v:.4f}" if isinstance(v, float) else ("" if v is None else v)

    def metric_cell(r: SweepRow, c: str) -> Any:
        return with_interval(r, c) if c in metric_cols else cell(r.get(c))

    table_rows = [{c: metric_cell(r, c) for c in cols} | {"job": str(r.get("job", "")).split("_", 1)[0],
                                                         "_passed": r.get("status") in ("ok", "pass")}
                  for r in rows]
    sections.append(Section("Jobs", [question_table(table_rows, cols)]))
    write_atomic(sweep_dir / "report.html", page(f"nomad-eval sweep — {len(rows)} job(s)", str(sweep_dir), sections))


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def sweep_curves(rows: list[SweepRow], param: str, metrics: list[str]) -> Chart:
    pts = []
    for r in rows:
        if (v := r.get(param)) is None:
            continue
        try:
            pts.append((float(v), r))
        except ValueError:
            continue
    pts.sort(key=lambda p: p[0])
    # A summary row carries `<metric>.low` / `.high` when its job reported an interval (report/merge.py).
    series = [Series(m, [_num(p[1].get(m)) for p in pts], [_num(p[1].get(f"{m}.low")) for p in pts],
                     [_num(p[1].get(f"{m}.high")) for p in pts], kind="line") for m in metrics]
    chart = Chart(f"metrics vs {param}", [p[0] for p in pts], series, x_title=param, numeric_x=True)
    if chart.has_intervals():
        chart.title += " (95% intervals)"
    return chart


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def matrix_heatmap(rows: list[MatrixRow], columns: tuple[str, ...]) -> Heatmap:
    from nomad_eval.metrics.registry import spec_for

    values = [[figure(r, c) for c in columns] for r in rows]

    def good(col: str, v: float | None) -> float | None:
        # Colour by goodness, so a low leakage rate is green like a high correctness.
        spec = spec_for(col)
        lower = (spec is not None and spec.direction == "lower") or col == "gap"
        return None if v is None else (1 - v if lower else v)

    return Heatmap("model capability matrix", list(columns), [str(r["model"]) for r in rows],
                   [[good(c, v) for c, v in zip(columns, row, strict=True)] for row in values],
                   [[("—" if v is None else f"{v:.2f}") for v in row] for row in values])
