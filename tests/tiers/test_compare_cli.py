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


def _rewrite_cases(run: Path, change: dict[str, float]) -> None:
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in cases:
        if not c["expect_refusal"]:
            c["metrics"].update(change)
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def test_compare_promote_regress_and_refuse(tmp_path: Path, data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    first = retrieval_run(tmp_path, data_dir, "first")
    r = run_cli("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}")
    assert r.returncode == 0, r.stderr
    fp = json.loads((first / "report.json").read_text())["identity"]["fingerprint"]
    promoted = json.loads((baselines / fp / "retrieval.json").read_text())
    assert promoted["schema_version"] == 2 and all("relevant_doc_ids" in c for c in promoted["cases"])
    plan = run_cli("tier=plan", f"plan.baseline={baselines / fp / 'retrieval.json'}", f"paths.run_dir={tmp_path / 'p'}")
    assert plan.returncode == 0, plan.stderr
    rows = {r["metric"]: r for r in json.loads((tmp_path / "p" / "plan.json").read_text())["rows"]}
    assert set(rows) >= {"recall@5", "mrr@5"} and rows["recall@5"]["n"] == 7
    assert "detectable change" in plan.stdout

    # An identical re-run: every delta 0, every interval zero-width, exit 0.
    second = retrieval_run(tmp_path, data_dir, "second")
    ok = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}",
                 f"compare.junit={tmp_path / 'junit.xml'}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "verdict: within noise" in ok.stdout and "no setting differs" in ok.stdout
    assert "[+0.0000, +0.0000]" in ok.stdout
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="0"' in junit and "recall@5 (within noise)" in junit

    # A metric nulled, then removed, in the run: the gate fails and names it.
    report = json.loads((second / "report.json").read_text())
    report["metrics"]["recall@5"] = None
    (second / "report.json").write_text(json.dumps(report))
    nulled = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert nulled.returncode == 1 and "recall@5 is null in the run" in nulled.stdout
    del report["metrics"]["recall@5"]
    (second / "report.json").write_text(json.dumps(report))
    removed = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert removed.returncode == 1 and "recall@5 is missing from the run" in removed.stdout

    # Every answerable question loses its document: significant even on a tiny suite.
    third = retrieval_run(tmp_path, data_dir, "third")
    _rewrite_cases(third, {"recall@5": 0.0})
    bad = run_cli("tier=compare", f"compare.run={third}", f"paths.baselines_dir={baselines}",
                  f"compare.junit={tmp_path / 'bad.xml'}")
    assert bad.returncode == 1, bad.stdout
    assert "regression: recall@5" in bad.stdout and "verdict: regression" in bad.stdout
    assert "recall@5 (regression)" in (tmp_path / "bad.xml").read_text()

    other = retrieval_run(tmp_path, data_dir, "other", "pipeline.chunk_size=300", "pipeline.chunk_overlap=50")
    refused = run_cli("tier=compare", f"compare.run={other}", f"compare.baseline={first / 'report.json'}")
    assert refused.returncode == 2
    assert "fingerprint differs" in refused.stdout

    # The system under test may differ (that is the point); what it was measured on may not.
    changed = retrieval_run(tmp_path, data_dir, "threshold", "threshold=0.26", "pipeline.term_boost=0.2")
    compared = run_cli("tier=compare", f"compare.run={changed}", f"compare.baseline={first}")
    assert compared.returncode == 0 and "verdict: within noise" in compared.stdout  # compared, not refused
    assert "threshold 0.25 → 0.26" in compared.stdout and "pipeline.term_boost 0.1 → 0.2" in compared.stdout
    subset = retrieval_run(tmp_path, data_dir, "subset", "limit=3")
    refused = run_cli("tier=compare", f"compare.run={subset}", f"compare.baseline={first}")
    assert refused.returncode == 2 and "limit differs" in refused.stdout

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
    assert "'recal@5': no such metric; did you mean 'recall@5'? (known: " in r.stderr
    assert "chunk_precision@k" in r.stderr
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
    ranking = json.loads((sweep / "ranking.json").read_text())
    assert ranking["reference"].startswith("0_") and ranking["correction"] == "holm"
    assert {r["job"] for r in ranking["metrics"]["recall@5"]["rows"]} == {job.name for job in sweep.iterdir()
                                                                        if job.name.startswith("1_")}
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
