"""The capability matrix from a real model sweep, promoted, and looked up; generation runs gated by compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nomad_eval.base.runfolder import seal
from nomad_eval.tiers.matrix import lookup
from tests.conftest import MINI, run_cli, run_in_process


def test_lookup_tells_below_at_and_above_the_row() -> None:
    rows = [{"model": "m", "e2e": 0.5}]
    assert "well below its row" in lookup(rows, "m", 0.35, "e2e", 0.1)
    assert "sits at its row" in lookup(rows, "m", 0.45, "e2e", 0.1)
    assert "sits at its row" in lookup(rows, "m", 0.6, "e2e", 0.1)
    assert "above its row" in lookup(rows, "m", 0.61, "e2e", 0.1)


@pytest.mark.slow
def test_matrix_sweep_promote_and_lookup(tmp_path: Path, data_dir: Path) -> None:
    sweep = tmp_path / "sweep"
    common = (*MINI, f"paths.data_dir={data_dir}", "quiet=true")
    r = run_cli("tier=matrix", "model=mock,smollm2", "limit=2", "repeats=1", "tier.max_tokens=16", *common,
                f"hydra.sweep.dir={sweep}", "-m")
    assert r.returncode == 0, r.stderr
    rows = json.loads((sweep / "matrix.json").read_text())["rows"]
    assert [row["model"] for row in rows] == ["mock", "smollm2-135m-instruct"]
    mock = rows[0]
    assert mock["oracle"] == 1.0 and mock["gap"] == mock["oracle"] - mock["e2e"]
    assert "| model | oracle | e2e | gap |" in (sweep / "matrix.md").read_text()

    baselines = tmp_path / "baselines"
    assert run_cli("tier=promote", f"promote.run={sweep}", f"paths.baselines_dir={baselines}").returncode == 0
    low = run_cli("tier=matrix", "matrix.lookup.score=0.2", "model=mock", f"paths.baselines_dir={baselines}",
                  *common)
    assert low.returncode == 0, low.stderr
    assert "well below its row" in low.stdout
    at = run_cli("tier=matrix", f"matrix.lookup.score={rows[1]['e2e']}", "model=smollm2",
                 f"paths.baselines_dir={baselines}",
                 *common)
    assert "sits at its row" in at.stdout


@pytest.mark.slow
def test_generation_runs_are_gated_per_mode(tmp_path: Path, data_dir: Path) -> None:
    baselines = tmp_path / "baselines"
    common = ("tier=generation", "model=mock", "mode=all", "repeats=2", *MINI, f"paths.data_dir={data_dir}",
              "quiet=true")
    first, second = tmp_path / "a", tmp_path / "b"
    # The runs and the baseline compared are made in this process; the compare commands below are under test.
    assert run_in_process(*common, f"paths.run_dir={first}") == 0
    assert run_in_process("tier=promote", f"promote.run={first}", f"paths.baselines_dir={baselines}") == 0
    fp = json.loads((first / "report.json").read_text())["identity"]["fingerprint"]
    assert (baselines / fp / "generation-all.json").exists()
    assert run_in_process(*common, f"paths.run_dir={second}") == 0
    ok = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert ok.returncode == 0, ok.stdout
    assert "verdict: pass" in ok.stdout
    cases = [json.loads(x) for x in (second / "cases.jsonl").read_text().splitlines()]
    for c in cases:  # the ceiling now misses mini-01 in e2e: a question that goes from pass to fail
        if c["id"] == "mini-01" and c["mode"] == "e2e":
            c["passed"], c["metrics"]["correctness"] = False, 0.0
    (second / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    seal(second)  # as a run with that outcome would have left it: an edited folder is refused otherwise
    # One question of seven flips on a deterministic model: it did flip, so the gate fails and names it, while
    # question sampling (shown beside) cannot generalise it.
    flipped = run_cli("tier=compare", f"compare.run={second}", f"paths.baselines_dir={baselines}")
    assert flipped.returncode == 1, flipped.stdout
    assert "regression: e2e.correctness" in flipped.stdout and "deterministic" in flipped.stdout
    assert "went from pass to fail: e2e:mini-01" in flipped.stdout
    # The small-suite note was shown with the first compare against this baseline; the console does not repeat it.
    assert "too small to tell a tolerance-sized change in general" in ok.stdout
    assert "too small to tell a tolerance-sized change in general" not in flipped.stdout
