"""A sweep on the console: the headline metrics and what changed come first, every column left out is named, and
each job prints one line instead of its tables."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from nomad_eval.base.console import console
from nomad_eval.report.merge import console_columns, write_summary
from tests.conftest import FIXTURES, run_cli

WIDE = "0.9000 [0.8123, 0.9551] n=40"


def _row(job: str, threshold: float, moved: float) -> dict[str, object]:
    # A generation-sized summary: 30 columns, settings every job shares first, recall@5 and the metric that moved last.
    row: dict[str, object] = {"job": f"{job}_threshold-{threshold}", "status": "ok", "tier": "retrieval",
                              "data.corpus_dir": "corpus", "suite": "core", "threshold": threshold}
    row |= {f"{f}@{k}": 0.9 for f in ("map", "hit", "precision", "mrr", "ndcg") for k in (1, 3, 5)}
    row |= {"chunk_precision@1": 0.9, "chunk_precision@3": 0.9, "rr": 0.9, "rprec": 0.9, "recall@1": 0.9,
            "recall@3": moved, "recall@5": 0.9}
    return row


def test_headline_and_changed_columns_come_first() -> None:
    rows = [_row("0", 0.3, 0.8), _row("1", 0.5, 0.7)]
    order = console_columns(list(rows[0]), rows)
    assert order[:3] == ["job", "status", "threshold"]
    assert order.index("recall@5") < order.index("recall@3") < order.index("map@1")
    assert order.index("recall@3") < order.index("tier")  # a metric that moved before a setting no job changed


def test_a_narrow_console_shows_the_headline_and_names_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    df = pl.DataFrame([_row("0", 0.3, 0.8), _row("1", 0.5, 0.7)])
    monkeypatch.setattr(console, "width", 120)
    with console.capture() as cap:
        write_summary(df, tmp_path, quiet=False)
    out = cap.get()
    header = next(line for line in out.splitlines() if "job" in line and "status" in line)
    assert "recall@5" in header and "threshold" in header
    note = " ".join(out[out.index(" more in "):].split())
    hidden = note.split(": ", 1)[1].split(", ")
    shown = [c for c in df.columns if c not in hidden]
    assert int(re.findall(r"(\d+) more in", out)[0]) == len(hidden) == df.width - len(shown)
    assert all(re.search(rf"\b{re.escape(c)}\b", header) for c in shown)


@pytest.mark.slow  # a two-job sweep through the CLI
def test_sweep_jobs_print_one_line_each_and_the_sweep_names_its_report(tmp_path: Path, data_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli("threshold=0.2,0.5", f"data.corpus_dir={FIXTURES / 'corpus'}",
                f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini", f"paths.data_dir={data_dir}",
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    jobs = [line for line in out.splitlines() if line.startswith("job ")]
    assert len(jobs) == 2 and all("verdict pass" in j and "recall@5" in j and "report.html" in j for j in jobs)
    assert out.count("retrieval — 8 goldens") == 0 and out.count("score separation") == 0  # no per-job tables
    assert out.count("sweep summary") == 1
    assert out.rstrip().splitlines()[-1] == f"sweep report: {sweep / 'report.html'}"
    assert not list(sweep.glob("*/*.log"))  # Hydra's job log is not made (nothing was ever written to it)


@pytest.mark.slow  # runs the tool
def test_a_run_ends_naming_its_html_report(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    r = run_cli(f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini",
                f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.rstrip().splitlines()
    # A run with a gate ends with its verdict (CI reads the last line), its report named just before it.
    assert lines[-1].startswith("verdict: pass: nothing gated: no floor and no baseline")
    assert lines[-2] == f"report: {run / 'report.html'}"
    assert sum(line.startswith("report: ") for line in lines) == 1
    assert (run / "report.html").is_file()
