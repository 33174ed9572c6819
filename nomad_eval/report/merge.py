"""Merge the jobs of a sweep (or any set of run directories) into one table: summary.parquet and summary.md."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.measure import Measurement
from rich.table import Table

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.report.io import read_report, write_atomic

if TYPE_CHECKING:  # polars costs ~0.1 s to import; only merges need it
    import polars as pl

SWEEP_FILE = "sweep.json"
# Overrides that never change what is measured; conf/config.yaml keeps them out of job folder names too.
UNMEASURED = {"paths.data_dir", "paths.run_dir", "quiet", "verbose", "resume", "cache"}
# A metric's interval travels as `<metric>.low`, `<metric>.high` and `<metric>.n` columns of its row.
INTERVAL_SUFFIXES = ("low", "high", "n")


def sweep_id(sweep_dir: Path) -> str | None:
    f = sweep_dir / SWEEP_FILE
    if not f.exists():
        return None
    try:
        value = json.loads(f.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:  # unreadable, not UTF-8, not JSON
        raise NomadError(f"{f}: not a readable sweep file ({exc})", 2) from None
    found = value.get("sweep_id") if isinstance(value, dict) else None
    if not isinstance(found, str):
        raise NomadError(f"{f}: not a sweep file: expected an object with a string 'sweep_id'", 2)
    return found


def job_status(report: Mapping[str, object]) -> str:
    """What a job's row says: `failed`, else its gate's verdict (`pass`, `regression`, ...), else `ok` (nothing was
    gated: no floor and no compare). A regressed job never reads `ok`."""
    gate = report.get("gate")
    if report.get("status") != "ok":
        return str(report.get("status"))
    if not isinstance(gate, Mapping) or not gate.get("verdict"):
        return "ok"
    gated = gate.get("metrics") or gate.get("floors") or gate.get("verdict") != "pass"
    return str(gate["verdict"]) if gated else "ok"


def job_exit_code(report: Mapping[str, object]) -> int:
    """The job's own exit code (docs/gate.md#exit-codes): its gate's; 2 for a job that failed (no verdict)."""
    gate = report.get("gate")
    if report.get("status") != "ok":
        return 2
    return int(gate.get("exit_code") or 0) if isinstance(gate, Mapping) else 0


# A row of the sweep summary: the job, its status, its overrides and its metrics with their intervals, one column
# each (summary.parquet keeps one typed column per number).
Cell = str | int | float | None
SweepRow = dict[str, Cell]


def _row(run_dir: Path) -> SweepRow:
    report = read_report(run_dir / "report.json").model_dump()  # checked: a damaged report names its file
    row: SweepRow = {"job": run_dir.name, "status": job_status(report), "exit_code": job_exit_code(report),
                           "error": report.get("error") or _cause(report)}
    for item in report.get("overrides") or []:
        key, _, value = item.lstrip("+~").partition("=")
        if key not in UNMEASURED:
            row[key] = value
    intervals = report.get("intervals") or {}
    for name, value in (report.get("metrics") or {}).items():
        row[name] = value
        # Flat columns, so summary.parquet stays one typed column per number; a report from before
        # intervals has none, and its jobs read as null in a sweep that mixes the two.
        if (iv := intervals.get(name)) is not None:
            row.update({f"{name}.low": iv.get("low"), f"{name}.high": iv.get("high"), f"{name}.n": iv.get("n")})
    return row


def _cause(report: Mapping[str, object]) -> str | None:
    """Why a gated job did not pass, for the row's `error` column."""
    gate = report.get("gate")
    if not isinstance(gate, Mapping) or gate.get("verdict") == "pass":
        return None
    return str(gate.get("cause") or "") or None


def is_interval_column(col: str, columns: Iterable[str]) -> bool:
    """`recall@5.low` and the like: a metric's interval, not a parameter or a metric of its own."""
    base, dot, suffix = col.rpartition(".")
    return bool(dot) and suffix in INTERVAL_SUFFIXES and base in set(columns)


def with_interval(row: Mapping[str, object], metric: str) -> str:
    """`value [low, high] n=N` when the sweep carries intervals for `metric` ("—" for a job without one), as
    report.md writes a run's own numbers."""
    v = row.get(metric)
    text = _cell(v)
    if v is None or f"{metric}.low" not in row:
        return text
    low, high, n = row.get(f"{metric}.low"), row.get(f"{metric}.high"), row.get(f"{metric}.n")
    return f"{text} " + ("—" if low is None or high is None else f"[{low:.4f}, {high:.4f}]") + \
        ("" if n is None else f" n={n}")


def _cell(v: Any) -> str:
    return "—" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)


def collect(run_dirs: list[Path], only_sweep: str | None = None) -> list[Path]:
    """Run directories that hold a report; with `only_sweep`, only the jobs of that sweep (no stale ones)."""
    out = []
    for d in sorted(set(run_dirs)):
        f = d / "report.json"
        if not f.exists():
            continue
        if only_sweep is not None and read_report(f).sweep_id != only_sweep:
            continue
        out.append(d)
    return out


def merge(run_dirs: list[Path]) -> pl.DataFrame:
    import polars as pl

    rows = [_row(d) for d in run_dirs]
    # Keys first seen after row 100 would be dropped without a full-length schema scan.
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def _shown(columns: list[str]) -> list[str]:
    """Columns a person reads: a metric's interval is folded into its cell, not given columns of its own."""
    return [c for c in columns if not is_interval_column(c, columns)]


def _md(df: pl.DataFrame) -> str:
    cols = _shown(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.iter_rows(named=True):
        lines.append("| " + " | ".join(with_interval(row, c) for c in cols) + " |")
    note = "Metrics: value [95% interval] n questions, where the job reported them.\n\n" \
        if any(c.endswith(".low") for c in df.columns) else ""
    return "# Sweep summary\n\n" + note + "\n".join(lines) + "\n"


def write_summary(df: pl.DataFrame, out_dir: Path, quiet: bool = False, sections: Iterable[str] = ()) -> None:
    """`sections`: markdown appended to summary.md (e.g. which retrieval metric predicts answers)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / ".summary.parquet.tmp"
    df.write_parquet(tmp)
    tmp.replace(out_dir / "summary.parquet")
    write_atomic(out_dir / "summary.md", _md(df) + "".join(sections))
    if quiet:
        return
    rows = df.to_dicts()
    shown = console_columns([c for c in _shown(df.columns) if c != "error"], rows)
    show = list(shown)
    t = _table(df.height, out_dir, show, rows)
    natural = console.options.update_width(10_000)  # measured unclamped: does the table fit unwrapped?
    while len(show) > 3 and Measurement.get(console, natural, t).maximum > console.width:
        show.pop()
        t = _table(df.height, out_dir, show, rows)
    console.print(t)
    if len(shown) > len(show):
        console.print(f"{len(shown) - len(show)} more in {out_dir / 'summary.md'}: {', '.join(shown[len(show):])}",
                      markup=False, highlight=False)


def console_columns(columns: list[str], rows: list[SweepRow]) -> list[str]:
    """The summary's columns in the order a console shows them before it runs out of width: the job and its
    status, the settings that differ between jobs, the headline metrics, the other metrics that differ, then the
    rest (settings every job shares, metrics no job moved)."""
    from nomad_eval.metrics.registry import headline_names, spec_for

    def varies(c: str) -> bool:
        return len({str(r.get(c)) for r in rows}) > 1

    headline = headline_names("retrieval", 5) + headline_names("generation", 5, ("e2e", "oracle", "noretrieval"))
    first = [c for c in ("job", "status", "exit_code") if c in columns]
    settings = [c for c in columns if c not in first and spec_for(c) is None and varies(c)]
    heads = [c for c in headline if c in columns]
    moved = [c for c in columns if spec_for(c) is not None and c not in heads and varies(c)]
    ordered = first + settings + heads + moved
    return ordered + [c for c in columns if c not in ordered]


def short_job(name: str) -> str:
    """A sweep job's number, on the console: its folder name repeats the settings that the other columns show."""
    num, sep, _ = name.partition("_")
    return num if sep and num.isdigit() else name


def _table(jobs: int, out_dir: Path, columns: list[str], rows: list[SweepRow]) -> Table:
    t = Table(title=f"sweep summary — {jobs} job(s), {out_dir} (job: the number its folder starts with)")
    for c in columns:
        t.add_column(c)
    for row in rows:
        t.add_row(*[short_job(str(row[c])) if c == "job" else with_interval(row, c) for c in columns])
    return t
