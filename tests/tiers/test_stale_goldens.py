"""A golden the knowledge base outgrew is "golden out of date", never a regression and never a silent pass; the
regressions among the other questions are still gated and named (issue 39). Real MiniLM and edge store on the
fixture corpus, copied into a temporary project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nomad_eval.base.runfolder import seal
from nomad_eval.gate.store import promote
from tests.conftest import FIXTURES, run_in_process

pytestmark = pytest.mark.slow


def _project(tmp_path: Path, data_dir: Path) -> tuple[Path, tuple[str, ...]]:
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    shutil.copytree(FIXTURES / "goldens", tmp_path / "goldens")
    args = ("suite=mini", f"data.corpus_dir={corpus}", f"data.goldens_dir={tmp_path / 'goldens'}",
            f"paths.data_dir={data_dir}", f"paths.baselines_dir={tmp_path / 'baselines'}", "quiet=true",
            "compare.junit=junit.xml", "compare.headline_k=1")
    assert run_in_process("tier=retrieval", *args, f"paths.run_dir={tmp_path / 'base'}") == 0
    promote(tmp_path / "base", tmp_path / "baselines")
    return corpus, args


def test_a_changed_fact_is_out_of_date_in_every_record_and_warn_passes(tmp_path: Path, data_dir: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus, args = _project(tmp_path, data_dir)
    kettle = corpus / "kettle-descaling.md"
    kettle.write_text(kettle.read_text().replace("stand for 40 minutes", "stand for 45 minutes"))
    capsys.readouterr()
    gated = ("tier=retrieval", *args, "compare.after_run=true")
    code = run_in_process(*gated, f"paths.run_dir={tmp_path / 'edited'}")
    out = capsys.readouterr().out
    message = ('mini-01: its answer "40 minutes" is in no document any more (kettle-descaling changed): update or '
               "retire the golden")
    assert code == 1, out
    gate = json.loads((tmp_path / "edited" / "report.json").read_text())["gate"]
    assert gate["verdict"] == "golden out of date" and gate["stale"] == [message]
    assert gate["evidence"] == {"gone": ["mini-01"]} and "regression" not in out
    assert f"golden out of date: {message}" in (tmp_path / "edited" / "report.md").read_text()
    assert message.replace("\"", "&#34;") in (tmp_path / "edited" / "report.html").read_text()
    junit = (tmp_path / "edited" / "junit.xml").read_text()
    assert 'name="goldens up to date"' in junit and 'failures="1"' in junit
    assert out.rstrip().endswith(f"verdict: golden out of date: {message}")
    # mini-08 also reads that document; its own answers are intact, so it is still gated.
    assert all(m["n"] in (6, 1) for m in gate["metrics"])

    code = run_in_process(*gated, "compare.stale=warn", f"paths.run_dir={tmp_path / 'w'}")
    out = capsys.readouterr().out
    gate = json.loads((tmp_path / "w" / "report.json").read_text())["gate"]
    assert code == 0 and gate["verdict"] == "pass" and gate["stale"] == [message] and gate["stale_warn"]
    assert f"golden out of date: {message}" in out
    junit = (tmp_path / "w" / "junit.xml").read_text()
    assert 'failures="0"' in junit and "out of date (compare.stale=warn)" in junit


def test_a_regression_planted_beside_an_out_of_date_golden_is_still_named(tmp_path: Path, data_dir: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    corpus, args = _project(tmp_path, data_dir)
    rope = corpus / "rope-storage.md"
    rope.write_text(rope.read_text().replace("10 years", "twelve years"))
    run = tmp_path / "edited"
    assert run_in_process("tier=retrieval", *args, f"paths.run_dir={run}") == 0  # no compare yet
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in cases:
        if c["id"] == "mini-03":  # planted: the compost question no longer finds its document
            c["metrics"].update({"recall@1": 0.0, "mrr@1": 0.0, "ndcg@1": 0.0})
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    seal(run)
    capsys.readouterr()
    code = run_in_process(*args, "tier=compare", f"compare.run={run}", "compare.stale=warn")
    out = capsys.readouterr().out
    assert code == 1
    assert "regression: recall@1" in out and "mini-03" in out
    assert 'golden out of date: mini-04: its answer "10 years" is in no document any more' in out
    junit = (run / "junit.xml").read_text()
    assert "recall@1 (regression)" in junit and "mini-04" in junit
