"""Compare, promote, gates and sweep summaries through the real entrypoint."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from tests.conftest import MINI, run_cli


def retrieval_run(tmp_path: Path, data_dir: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "quiet=true", *extra)
    assert r.returncode == 0, r.stderr
    return out


def test_compare_promote_regress_and_refuse(tmp_path: Path, data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    first = retrieval_run(tmp_path, data_dir, "first")
    r = run_cli("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}")
    assert r.returncode == 0, r.stderr
    fp = json.loads((first / "report.json").read_text())["identity"]["fingerprint"]
    assert (baselines / fp / "retrieval.json").exists()

    second = retrieval_run(tmp_path, data_dir, "second")
    ok = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}",
                 f"compare.junit={tmp_path / 'junit.xml'}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "no regression" in ok.stdout and "failures=\"0\"" in (tmp_path / "junit.xml").read_text()

    report = json.loads((second / "report.json").read_text())
    report["metrics"]["chunk_precision@3"] -= 0.05
    (second / "report.json").write_text(json.dumps(report))
    bad = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert bad.returncode == 1
    assert "regressed: chunk_precision@3" in bad.stdout

    other = retrieval_run(tmp_path, data_dir, "other", "pipeline.chunk_size=300", "pipeline.chunk_overlap=50")
    refused = run_cli("tier=compare", f"compare.run={other}", f"compare.baseline={first / 'report.json'}")
    assert refused.returncode == 2
    assert "fingerprint differs" in refused.stdout

    ident = retrieval_run(tmp_path, data_dir, "topk", "pipeline.top_k=3")
    refused = run_cli("tier=compare", f"compare.run={ident}", f"compare.baseline={first}")
    assert refused.returncode == 2 and "top_k differs" in refused.stdout

    missing = run_cli("tier=compare", f"compare.run={other}", f"paths.baselines_dir={baselines}")
    assert missing.returncode == 2 and "no baseline" in missing.stderr
    typo = run_cli("tier=compare", f"compare.run={tmp_path / 'no-such-run'}")
    assert typo.returncode == 2 and "no report.json here" in typo.stderr  # not comparable, never "regressed"


def test_floor_fails_after_writing_report(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "gated"
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "quiet=true",
                "gate.fail_under={recall@5:1.01}")
    assert r.returncode == 1
    assert "recall@5" in r.stdout and "no prompt work fixes missing context" in r.stdout
    assert json.loads((out / "report.json").read_text())["status"] == "ok"


def test_a_misspelt_gate_metric_is_refused_before_the_run(tmp_path: Path, data_dir: Path) -> None:
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'r'}",
                "quiet=true", "gate.fail_under={recal@5:0.9,hit:0.5}")
    assert r.returncode == 2
    assert "'recal@5': no such metric (known: chunk_precision@k" in r.stderr
    assert "hit needs a cut-off, e.g. hit@5" in r.stderr
    assert not (data_dir / "qdrant-edge").exists()  # refused before the store was touched


def test_first_gated_run_without_baseline_keeps_its_report_and_can_be_promoted(tmp_path: Path,
                                                                               data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    gated = ("compare.after_run=true", f"paths.baselines_dir={baselines}")
    first = tmp_path / "first"
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={first}", "quiet=true", *gated)
    assert r.returncode == 2 and "no baseline" in r.stderr
    report = json.loads((first / "report.json").read_text())
    assert report["status"] == "ok" and report["metrics"]["recall@5"] is not None  # the measurement is kept
    assert run_cli("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}").returncode == 0
    again = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={tmp_path / 'again'}",
                    "quiet=true", *gated)
    assert again.returncode == 0, again.stdout + again.stderr


def test_sweep_summary_survives_a_failing_job(tmp_path: Path, data_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    r = run_cli("tier=retrieval", "threshold=0.3,0.5", *MINI, f"paths.data_dir={data_dir}", "quiet=true",
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 0, r.stderr
    df = pl.read_parquet(sweep / "summary.parquet")
    assert df.height == 2 and sorted(df["threshold"].to_list()) == ["0.3", "0.5"]
    assert "quiet" not in df.columns and "paths.data_dir" not in df.columns  # they change nothing measured
    summary_md = (sweep / "summary.md").read_text().replace("| job | status | error ", "")
    assert "recall@5" in df.columns and "| threshold" in summary_md
    # A job's folder can be handed back on the command line unquoted, and leaves out the data dir and quiet.
    job = sorted(p for p in sweep.iterdir() if (p / "report.json").exists())[1]
    assert job.name.startswith("1_") and "+threshold-0.5+" in job.name
    assert not any(bad in job.name for bad in ("=", ",", "quiet", "data_dir"))
    promoted = run_cli("tier=promote", f"promote.run={job}", f"paths.baselines_dir={tmp_path / 'b'}")
    assert promoted.returncode == 0, promoted.stderr

    # Same sweep dir again, one job failing: the summary holds this sweep's two jobs only, one failed.
    r = run_cli("tier=retrieval", "suite=mini,nosuch", *MINI[:2], f"paths.data_dir={data_dir}", "quiet=true",
                f"hydra.sweep.dir={sweep}", "-m")
    df = pl.read_parquet(sweep / "summary.parquet")
    assert df.height == 2, df
    assert sorted(df["status"].to_list()) == ["failed", "ok"]
    assert "nosuch" in df.filter(pl.col("status") == "failed")["error"][0]

    # The standalone merge over the same folder agrees, and ignores the earlier sweep's stale jobs.
    again = run_cli("tier=compare", f"compare.runs=[{sweep}]", f"compare.out={tmp_path / 'merged'}")
    assert again.returncode == 0, again.stderr
    assert pl.read_parquet(tmp_path / "merged" / "summary.parquet").height == 2
