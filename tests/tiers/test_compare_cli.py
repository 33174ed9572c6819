"""Compare, promote, the gate and sweep summaries through the real entrypoint: exit codes, the console's last
line, stderr's first line and the files CI keeps are what is tested here. The runs they read are made in this
process (the CLI's start-up is not what is tested there)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from nomad_eval.base.runfolder import seal
from tests.conftest import FIXTURES, MINI, run_cli, run_in_process

pytestmark = pytest.mark.slow


def retrieval_run(tmp_path: Path, data_dir: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}",
                          "quiet=true", *extra) == 0
    return out


def _rewrite_cases(run: Path, change: dict[str, float]) -> None:
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in cases:
        if not c["expect_refusal"]:
            c["metrics"].update(change)
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    seal(run)  # as a run with these outcomes would have left it (an edited folder is refused)


def _last_line(text: str) -> str:
    return [x for x in text.splitlines() if x.strip()][-1]


def test_compare_promote_regress_and_refuse(tmp_path: Path, data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    first = retrieval_run(tmp_path, data_dir, "first")
    r = run_cli("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}")
    assert r.returncode == 0, r.stderr
    fp = json.loads((first / "report.json").read_text())["identity"]["fingerprint"]
    promoted = json.loads((baselines / fp / "retrieval.json").read_text())
    assert promoted["schema_version"] == 2 and all("relevant_doc_ids" in c for c in promoted["cases"])
    assert set(promoted["report"]["subject"]["goldens"]) == {f"mini-0{i}" for i in range(1, 9)}

    # An identical re-run: every delta 0, every interval zero-width, exit 0.
    second = retrieval_run(tmp_path, data_dir, "second")
    ok = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}",
                 f"compare.junit={tmp_path / 'junit.xml'}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert _last_line(ok.stdout).startswith("verdict: pass: ") and "within tolerance" in _last_line(ok.stdout)
    assert "nothing in the documents or settings" in ok.stdout
    assert "[+0.0000, +0.0000]" in ok.stdout and ok.stderr == ""
    junit = (tmp_path / "junit.xml").read_text()
    assert 'failures="0"' in junit and "recall@5 (within tolerance)" in junit

    # A metric nulled, then removed, in the run: the gate fails and names it.
    report = json.loads((second / "report.json").read_text())
    report["metrics"]["recall@5"] = None
    (second / "report.json").write_text(json.dumps(report))
    seal(second)
    nulled = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert nulled.returncode == 1 and "recall@5 is null in the run" in nulled.stdout
    assert nulled.stderr.startswith("not measured: recall@5 is null in the run")

    # Every answerable question loses its document: a regression, named with its questions.
    third = retrieval_run(tmp_path, data_dir, "third")
    _rewrite_cases(third, {"recall@5": 0.0})
    bad = run_cli("tier=compare", f"compare.run={third}", f"paths.baselines_dir={baselines}",
                  f"compare.junit={tmp_path / 'bad.xml'}")
    assert bad.returncode == 1, bad.stdout
    assert _last_line(bad.stdout).startswith(
        "verdict: regression: recall@5 worse: 1.0000 → 0.0000, higher is better (mini-01, mini-02")
    assert "recall@5 (regression)" in (tmp_path / "bad.xml").read_text()
    # One tolerance for every metric (compare.tolerance, upstream's --tolerance): a drop of 1 within 1 passes.
    loose = run_cli("tier=compare", f"compare.run={third}", f"paths.baselines_dir={baselines}", "compare.tolerance=1.0")
    assert loose.returncode == 0 and _last_line(loose.stdout).startswith("verdict: pass: "), loose.stdout

    # The system under test may differ (that is the point); what it was measured on may not.
    changed = retrieval_run(tmp_path, data_dir, "threshold", "threshold=0.26", "pipeline.term_boost=0.2")
    compared = run_cli("tier=compare", f"compare.run={changed}", f"compare.baseline={first}")
    assert compared.returncode == 0 and _last_line(compared.stdout).startswith("verdict: pass: ")
    assert "threshold 0.25 → 0.26" in compared.stdout and "pipeline.term_boost 0.1 → 0.2" in compared.stdout
    subset = retrieval_run(tmp_path, data_dir, "subset", "limit=3")
    refused = run_cli("tier=compare", f"compare.run={subset}", f"compare.baseline={first}")
    assert refused.returncode == 2 and "limit differs: run 3, baseline None; run with the baseline's limit" \
        in refused.stderr

    empty = run_cli("tier=compare", f"compare.run={first}", f"paths.baselines_dir={tmp_path / 'none'}")
    assert empty.returncode == 2 and "no baseline for tier retrieval, suite 'mini'" in empty.stderr
    assert "tier=promote promote.run=<run dir>" in empty.stderr  # the next step
    typo = run_cli("tier=compare", f"compare.run={tmp_path / 'no-such-run'}")
    assert typo.returncode == 2 and "no report.json here" in typo.stderr  # not comparable, never "regressed"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    corpus, goldens = tmp_path / "corpus", tmp_path / "goldens"
    shutil.copytree(FIXTURES / "corpus", corpus)
    shutil.copytree(FIXTURES / "goldens", goldens)
    return corpus, goldens


def test_the_gate_compares_across_document_chunking_and_golden_changes(tmp_path: Path, data_dir: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    corpus, goldens = _project(tmp_path)
    args = ("tier=retrieval", "suite=mini", f"data.corpus_dir={corpus}", f"data.goldens_dir={goldens}",
            f"paths.data_dir={data_dir}", f"paths.baselines_dir={tmp_path / 'baselines'}", "quiet=true")
    # Five documents, top 5: every document comes back for every question, so the gate reads the first rank.
    gated = (*args, "compare.after_run=true", "compare.junit=junit.xml", "compare.headline_k=1")

    def gated_run(name: str, *extra: str) -> tuple[int, str]:
        capsys.readouterr()
        code = run_in_process(*gated, *extra, f"paths.run_dir={tmp_path / name}")
        return code, capsys.readouterr().out

    assert run_in_process(*args, f"paths.run_dir={tmp_path / 'base'}") == 0
    assert run_cli("tier=promote", f"promote.run={tmp_path / 'base'}",
                   f"paths.baselines_dir={tmp_path / 'baselines'}").returncode == 0

    # The rope document loses everything that answers mini-04: its fingerprint has no baseline, the nearest
    # one is used and named, the document is named, and the golden is out of date (its answer is in no document
    # any more), which fails the gate as such, not as a regression.
    rope = corpus / "rope-storage.md"
    rope.write_text("# Notes\n\nFeed the sourdough starter with flour and water every day.\n")
    code, out = gated_run("edited")
    assert code == 1, out
    assert "no baseline for this fingerprint" in out and "documents changed (1): rope-storage" in out
    gate = json.loads((tmp_path / "edited" / "report.json").read_text())["gate"]
    assert gate["verdict"] == "golden out of date" and gate["cause"].startswith('mini-04: its answer "10 years"')
    assert gate["changes"][0] == "documents changed (1): rope-storage"
    shutil.copy(FIXTURES / "corpus" / "rope-storage.md", rope)

    # Chunking changed: compared with the nearest baseline, the setting named with both values.
    code, out = gated_run("chunked", "pipeline.chunk_size=300", "pipeline.chunk_overlap=50")
    assert "pipeline.chunk_size 800 → 300" in out
    gate = json.loads((tmp_path / "chunked" / "report.json").read_text())["gate"]
    assert code == gate["exit_code"] and gate["verdict"] in ("pass", "regression")

    # A golden added and one whose relevant documents changed: listed, neither gated.
    lines = [json.loads(x) for x in (goldens / "mini.jsonl").read_text().splitlines()]
    lines[1]["relevantDocIds"] = ["rope-storage"]  # mini-02 now expects the wrong document: not gated
    lines.append({**lines[0], "id": "mini-09", "query": "How long does the vinegar stand in the kettle?"})
    (goldens / "mini.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out = gated_run("grown")
    assert code == 0, out
    assert "questions added (1; scored, not gated): mini-09" in out
    assert "questions changed (1; judgement changed, not gated): mini-02" in out


def test_a_broken_floor_is_in_every_record_and_promote_refuses_it(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "gated"
    r = run_cli("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={out}", "quiet=true",
                "gate.fail_under={recall@5:1.01}", "compare.junit=junit.xml")
    assert r.returncode == 1
    assert _last_line(r.stdout) == "verdict: floor broken: recall@5 1.0000 < 1.01"
    assert r.stderr.splitlines()[0].startswith("floor broken: recall@5 1.0000 < 1.01")
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "ok" and report["gate"]["verdict"] == "floor broken"
    iv = report["intervals"]["recall@5"]
    assert report["gate"]["floors"] == [{"metric": "recall@5", "floor": 1.01, "value": report["metrics"]["recall@5"],
                                         "broken": True, "reason": "recall@5 1.0000 < 1.01", "n": 7,
                                         "low": iv["low"], "high": iv["high"]}]
    junit = (out / "junit.xml").read_text()
    assert 'failures="1"' in junit and '<testcase classname="nomad-eval.floors" name="floor recall@5"><failure' \
        in junit
    assert "verdict: floor broken: recall@5 1.0000 &lt; 1.01" in (out / "report.html").read_text()
    assert "**verdict: floor broken: recall@5 1.0000 < 1.01**" in (out / "report.md").read_text()

    refused = run_cli("tier=promote", f"promote.run={out}", f"paths.baselines_dir={tmp_path / 'b'}")
    assert refused.returncode == 1 and "promote refused: floor broken: recall@5 1.0000 < 1.01" in refused.stderr
    assert not (tmp_path / "b").exists()
    forced = run_cli("tier=promote", f"promote.run={out}", f"paths.baselines_dir={tmp_path / 'b'}",
                     "promote.force=true")
    assert forced.returncode == 0 and "promoted despite: floor broken" in forced.stdout


def test_promote_shows_old_and_new_and_refuses_a_regression(tmp_path: Path, data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    good = retrieval_run(tmp_path, data_dir, "good")
    assert run_cli("tier=promote", f"promote.run={good}", f"paths.baselines_dir={baselines}").returncode == 0
    worse = retrieval_run(tmp_path, data_dir, "worse")
    _rewrite_cases(worse, {"recall@5": 0.0})
    report = json.loads((worse / "report.json").read_text())
    report["metrics"]["recall@5"] = 0.0
    (worse / "report.json").write_text(json.dumps(report))
    seal(worse)
    r = run_cli("tier=promote", f"promote.run={worse}", f"paths.baselines_dir={baselines}")
    assert r.returncode == 1 and "recall@5: 1.0000 → 0.0000 (regression, higher is better)" in r.stdout
    assert "against that baseline: regression: recall@5" in r.stderr


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
    assert r.returncode == 2 and r.stderr.startswith("not comparable: no baseline for tier retrieval")
    report = json.loads((first / "report.json").read_text())
    assert report["status"] == "ok" and report["metrics"]["recall@5"] is not None  # the measurement is kept
    assert report["gate"]["verdict"] == "not comparable"
    assert run_cli("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}").returncode == 0
    assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}",
                          f"paths.run_dir={tmp_path / 'again'}", "quiet=true", *gated) == 0


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
    assert sorted(df["status"].to_list()) == ["failed", "ok"]  # nothing gated: "ok", not "pass"
    assert r.returncode == 2  # a job that failed, none that got worse
    assert "nosuch" in df.filter(pl.col("status") == "failed")["error"][0]

    # The standalone merge over the same folder agrees, and ignores the earlier sweep's stale jobs.
    again = run_cli("tier=compare", f"compare.runs=[{sweep}]", f"compare.out={tmp_path / 'merged'}")
    assert again.returncode == 0, again.stderr
    assert pl.read_parquet(tmp_path / "merged" / "summary.parquet").height == 2


def test_compare_metrics_refuses_a_descriptive_metric(make_cfg: Any) -> None:
    """`returned` (chunks returned) is descriptive: docs/metrics.md says it is never gated, so naming it is refused."""
    from nomad_eval.base.errors import NomadError
    from nomad_eval.gate.verdict import gated_metrics
    from nomad_eval.report.schema import Report
    from tests.typed_config import compare_settings

    base = Report(tier="retrieval", metrics={"returned": 3.0, "recall@5": 1.0})
    assert gated_metrics(compare_settings(make_cfg("compare.metrics=[recall@5]")), base, base, []) == ["recall@5"]
    with pytest.raises(NomadError) as exc:
        gated_metrics(compare_settings(make_cfg("compare.metrics=[returned]")), base, base, [])
    assert exc.value.exit_code == 2 and "descriptive and never gated" in str(exc.value)
