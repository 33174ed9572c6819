"""tier=corpus action=review: documents renamed, split and edited; the run proceeds and calls none of it a
regression, review proposes the remaps and the new pattern, and accepting them changes only those lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nomad_eval.gate.store import promote
from tests.conftest import FIXTURES, run_in_process

pytestmark = pytest.mark.slow


def test_renamed_split_and_edited_documents_are_proposed_and_accepted(tmp_path: Path, data_dir: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    corpus, goldens = tmp_path / "corpus", tmp_path / "goldens"
    shutil.copytree(FIXTURES / "corpus", corpus)
    shutil.copytree(FIXTURES / "goldens", goldens)
    review_file = tmp_path / "review.json"
    args = ("suite=mini", f"data.corpus_dir={corpus}", f"data.goldens_dir={goldens}", f"paths.data_dir={data_dir}",
            f"paths.baselines_dir={tmp_path / 'baselines'}", "quiet=true", "compare.headline_k=1")
    review = ("tier=corpus", "action=review", *args, f"tier.review_file={review_file}")
    assert run_in_process("tier=retrieval", *args, f"paths.run_dir={tmp_path / 'base'}") == 0
    promote(tmp_path / "base", tmp_path / "baselines")

    (corpus / "rope-storage.md").rename(corpus / "climbing-rope.md")
    kettle = (corpus / "kettle-descaling.md").read_text()
    head, steps = kettle.split("## Descaling steps")
    (corpus / "kettle-scale.md").write_text(head)
    (corpus / "kettle-steps.md").write_text("# Descaling steps" + steps)
    (corpus / "kettle-descaling.md").unlink()
    lantern = corpus / "lantern-batteries.md"
    lantern.write_text(lantern.read_text().replace("3 hours on high", "5 hours on high"))

    capsys.readouterr()
    code = run_in_process("tier=retrieval", *args, "compare.after_run=true", "gate.fail_under={recall@5:0.9}",
                          f"paths.run_dir={tmp_path / 'edited'}")
    out = capsys.readouterr().out
    gate = json.loads((tmp_path / "edited" / "report.json").read_text())["gate"]
    assert code == 1 and gate["verdict"] == "golden out of date", out
    # The four out-of-date goldens (scored as misses) break no floor: it reads the questions still up to date.
    (floor,) = gate["floors"]
    assert not floor["broken"] and floor["reason"].endswith("(4 out-of-date golden(s) left out)"), floor
    assert gate["evidence"]["relocated"] == ["mini-01", "mini-04", "mini-08"]
    assert gate["evidence"]["gone"] == ["mini-07"] and "regression" not in out

    assert run_in_process(*review) == 0
    proposals = {p["id"]: p for p in json.loads(review_file.read_text())["proposals"]}
    assert {k: (p["kind"], p["after"]) for k, p in proposals.items() if p["kind"] == "remap"} == {
        "mini-01": ("remap", {"relevantDocIds": ["kettle-steps"]}),
        "mini-04": ("remap", {"relevantDocIds": ["climbing-rope"]}),
        "mini-08": ("remap", {"relevantDocIds": ["garden-compost", "kettle-steps"]})}
    seven = proposals["mini-07"]
    assert seven["kind"] == "pattern" and seven["after"]["mustInclude"] == ["5 hours"]
    assert "5 hours on high" in seven["after"]["sentence"] and "3 hours on high" in seven["before"]["sentence"]

    before = (goldens / "mini.jsonl").read_bytes().split(b"\n")
    accepted = json.loads(review_file.read_text())
    for p in accepted["proposals"]:
        p["accept"] = True
    review_file.write_text(json.dumps(accepted))
    assert run_in_process(*review, "tier.accept=true") == 0
    after = (goldens / "mini.jsonl").read_bytes().split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert [i + 1 for i in changed] == sorted(p["line"] for p in accepted["proposals"])  # every other line as it was
    assert json.loads(after[6])["mustInclude"] == ["5 hours"]

    # The next run: the updated goldens' judgements changed (not gated), nothing is out of date, the gate passes;
    # and promoted, it is the baseline the following run passes against.
    assert run_in_process("tier=retrieval", *args, "compare.after_run=true", f"paths.run_dir={tmp_path / 'next'}") == 0
    promote(tmp_path / "next", tmp_path / "baselines")
    assert run_in_process("tier=retrieval", *args, "compare.after_run=true", f"paths.run_dir={tmp_path / 'more'}") == 0
    gate = json.loads((tmp_path / "more" / "report.json").read_text())["gate"]
    assert gate["verdict"] == "pass" and not gate["stale"] and not gate["questions"]
