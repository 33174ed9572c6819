"""A run or baseline written under refusal_correctness reads as refusal_recall and false_refusal_rate, and a
generation run reports the two apart, each over its own goldens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.runfolder import seal
from nomad_eval.cli.entry import run_tier
from nomad_eval.gate.store import promote
from nomad_eval.records import by_name
from nomad_eval.report.baseline import load_baseline, load_run
from tests.conftest import MINI


def _old_style(run: Path) -> None:
    """Rewrites a fresh run as a run of before the split: one combined value per case and per mode."""
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    for c in cases:
        m = c["metrics"]
        recall, false = m.pop("refusal_recall"), m.pop("false_refusal_rate")
        m["refusal_correctness"] = recall if c["expect_refusal"] else 1.0 - false
    (run / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    report = json.loads((run / "report.json").read_text())
    for name in [n for n in report["metrics"] if n.endswith(("refusal_recall", "false_refusal_rate"))]:
        report["metrics"].pop(name)
        report["intervals"].pop(name, None)
    report["metrics"]["e2e.refusal_correctness"] = sum(c["metrics"]["refusal_correctness"] for c in cases) / len(cases)
    (run / "report.json").write_text(json.dumps(report))
    seal(run)


def test_old_runs_and_baselines_read_as_the_new_measures(make_cfg: Callable[..., DictConfig],
                                                         tmp_path: Path) -> None:
    cfg = make_cfg(*MINI, "tier=generation", "model=mock", "mode=e2e", "repeats=1")
    assert run_tier(cfg) == 0
    run = Path(cfg.paths.run_dir)
    fresh = json.loads((run / "report.json").read_text())["metrics"]
    _old_style(run)
    report, cases = load_run(run)
    assert cases is not None
    assert all("refusal_correctness" not in by_name(c.metrics) for c in cases)
    assert "e2e.refusal_correctness" not in report.metrics
    for name in ("e2e.refusal_recall", "e2e.false_refusal_rate"):
        assert report.metrics[name] == pytest.approx(fresh[name])
    refusal = [c for c in cases if c.expect_refusal]
    assert refusal and all(by_name(c.metrics)["false_refusal_rate"] is None for c in refusal)
    # Promoted from the old run, the baseline file holds only the new names, and reads back the same.
    target = promote(run, tmp_path / "baselines")
    text = target.read_text()
    assert "refusal_correctness" not in text
    base = load_baseline(target)
    assert base.report.metrics["e2e.refusal_recall"] == pytest.approx(fresh["e2e.refusal_recall"])


def test_a_baseline_file_with_the_old_name_gates_on_the_new(make_cfg: Callable[..., DictConfig],
                                                            tmp_path: Path) -> None:
    cfg = make_cfg(*MINI, "tier=generation", "model=mock", "mode=e2e", "repeats=1")
    assert run_tier(cfg) == 0
    target = promote(Path(cfg.paths.run_dir), tmp_path / "baselines")
    raw: dict[str, Any] = json.loads(target.read_text())
    for c in raw["cases"]:
        m = c["metrics"]
        recall, false = m.pop("refusal_recall"), m.pop("false_refusal_rate")
        m["refusal_correctness"] = recall if c["expect_refusal"] else 1.0 - false
    target.write_text(json.dumps(raw))
    again = make_cfg(*MINI, "tier=generation", "model=mock", "mode=e2e", "repeats=1", "compare.after_run=true",
                     f"compare.baseline={target}", f"paths.run_dir={tmp_path / 'again'}")
    assert run_tier(again) == 0
    gate = json.loads((tmp_path / "again" / "report.json").read_text())["gate"]
    gated = {m["name"]: m for m in gate["metrics"]}
    assert gated["e2e.refusal_recall"]["outcome"] == gated["e2e.false_refusal_rate"]["outcome"] == "within tolerance"
    assert gated["e2e.refusal_recall"]["n"] == 1 and gated["e2e.false_refusal_rate"]["n"] == 7  # each its own n
