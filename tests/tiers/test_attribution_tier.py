"""Attribution on real runs: a document added that outranks a question's own, beside a setting that changes
nothing; the flip is named with its change and each gated delta is split so that its parts add up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nomad_eval.gate.store import OBJECTS, promote
from tests.conftest import FIXTURES, run_in_process

pytestmark = pytest.mark.slow


def test_an_added_document_that_ranks_first_is_named_and_the_waterfall_adds_up(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    args = ("tier=retrieval", "suite=mini", f"data.corpus_dir={corpus}", f"data.goldens_dir={FIXTURES / 'goldens'}",
            f"paths.data_dir={data_dir}", f"paths.baselines_dir={tmp_path / 'baselines'}", "quiet=true",
            "compare.headline_k=1")
    assert run_in_process(*args, f"paths.run_dir={tmp_path / 'base'}") == 0
    promote(tmp_path / "base", tmp_path / "baselines")
    assert len(list((tmp_path / "baselines" / OBJECTS).iterdir())) >= 5  # the baseline's texts, by content hash

    (corpus / "kettle-vinegar-new.md").write_text(
        "# Vinegar mix for the Brindle K2 kettle\n\nHow long should the vinegar mix stand in the Brindle K2 kettle? "
        "Let the vinegar mix stand in the Brindle K2 kettle until the scale has gone, then empty it.\n")
    capsys.readouterr()
    code = run_in_process(*args, "compare.after_run=true", "pipeline.term_boost=0.051",
                          f"paths.run_dir={tmp_path / 'pr'}")
    out = capsys.readouterr().out
    gate = json.loads((tmp_path / "pr" / "report.json").read_text())["gate"]
    assert code == 1 and gate["verdict"] == "regression", out
    assert ("mini-01: mrr@1 1 → 0 because kettle-vinegar-new was added and now ranks first (reverting it alone "
            "restores it)") in gate["attribution"]
    assert f"flipped: {gate['attribution'][0]}" in out
    for metric in gate["metrics"]:
        parts = gate["waterfall"][metric["name"]]
        assert [p["change"] for p in parts][-2:] == ["interaction", "not reproduced by the replay"]
        assert sum(p["value"] for p in parts) == metric["delta"], metric["name"]  # to the last digit
        term = next(p for p in parts if p["change"] == "pipeline.term_boost")
        assert term["value"] == 0.0 and not term["questions"]
    assert "mini-01" in next(p for p in gate["waterfall"]["mrr@1"] if p["change"] == "kettle-vinegar-new")["questions"]
