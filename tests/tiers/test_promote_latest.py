"""promote.run=latest: the newest finished, whole run of the tier and suite, so CI on main needs no path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import seal
from nomad_eval.tiers.promote import latest


def _run(root: Path, name: str, when: int, *, tier: str = "retrieval", suite: str = "core", status: str = "ok",
         sealed: bool = True) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    report = {"tier": tier, "status": status, "identity": {"suite": suite}}
    (folder / "report.json").write_text(json.dumps(report))
    (folder / "cases.jsonl").write_text("{}\n")
    if sealed:
        seal(folder)
    os.utime(folder / "report.json", (when, when))
    return folder


def test_latest_is_the_newest_finished_whole_run_of_the_tier_and_suite(tmp_path: Path) -> None:
    out, multi = tmp_path / "outputs", tmp_path / "multirun"
    older = _run(out, "a", 100)
    _run(out, "other-suite", 900, suite="long")
    _run(out, "other-tier", 800, tier="generation")
    _run(out, "failed", 700, status="failed")
    _run(out, "cut-short", 600, sealed=False)  # killed before its manifest: not a finished run
    damaged = _run(multi, "0", 500)
    assert latest([out, multi], "retrieval", "core") == damaged
    (damaged / "cases.jsonl").write_text("changed after the run\n")  # no longer the run its manifest lists
    assert latest([out, multi], "retrieval", "core") == older
    assert latest([out, multi], "generation", "core") == out / "other-tier"


def test_latest_without_such_a_run_names_the_next_step(tmp_path: Path) -> None:
    _run(tmp_path / "outputs", "a", 100, suite="long")
    with pytest.raises(NomadError) as none:
        latest([tmp_path / "outputs", tmp_path / "missing"], "retrieval", "core")
    assert none.value.exit_code == 2
    assert "no finished retrieval run of suite 'core'" in str(none.value) and "tier=retrieval suite=core" in str(
        none.value)
