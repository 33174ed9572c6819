"""A misspelt key gets the nearest real one; every key the shipped configs can take passes untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nomad_eval.cli.suggest import known_keys, unknown_key

CONF = [p for p in (Path(__file__).resolve().parents[2] / "conf", Path(__file__).resolve().parents[2] /
                    "nomad_eval" / "conf") if p.is_dir()]


@pytest.mark.parametrize("override", [
    "threshold=0.3", "model=smollm2", "model.threads=1", "judge.model.threads=1", "tier.passages=7",
    "gate.fail_under={recall@5:0.9}", "paths.data_dir=/x", "+anything.new=1", "~embedder.batch_size",
    "model.api_key=x", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "pipeline.glossary_file=x",
])
def test_keys_the_configs_can_take_pass(override: str) -> None:
    tree, groups = known_keys(CONF)
    assert unknown_key(override, tree, groups) is None


def test_every_key_of_every_shipped_option_passes() -> None:
    # Each key each YAML file sets, under its group: the check must never refuse what a config file allows.
    tree, groups = known_keys(CONF)
    for conf in CONF:
        for path in conf.rglob("*.yaml"):
            if path.parent == conf and path.name != "config.yaml":
                continue  # data files beside the config (the glossary), not config
            if path.is_relative_to(conf / "hydra"):
                continue  # Hydra's own groups (the sweeper): `hydra.*` keys are Hydra's to check
            data = yaml.safe_load(path.read_text()) or {}
            group = path.parent.name if path.parent != conf else ""
            if "@package _global_" in path.read_text():
                group = ""
            for key, value in data.items():
                if key == "defaults" or isinstance(value, dict):
                    continue
                full = f"{group}.{key}" if group else key
                assert unknown_key(f"{full}=1", tree, groups) is None, (path, full)


def test_a_misspelt_key_is_answered_with_the_nearest_one() -> None:
    tree, groups = known_keys(CONF)
    assert "did you mean `threshold`?" in (unknown_key("treshold=0.3", tree, groups) or "")
    assert "did you mean `pipeline.top_k`?" in (unknown_key("pipeline.topk=3", tree, groups) or "")


def test_the_command_line_exits_2_with_the_suggestion_before_any_work(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "nomad_eval", "treshold=0.3"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown key `treshold`" in r.stderr and "did you mean `threshold`?" in r.stderr
    assert not (tmp_path / "outputs").exists()  # refused before Hydra made a run folder


def test_help_lists_tiers_groups_and_examples(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "nomad_eval", "--help"], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 0
    assert "tier: app, browse, calibrate, compare, corpus" in r.stdout
    assert "model: mock, ollama, openai, smollm2" in r.stdout
    assert "tier=corpus action=check" in r.stdout and "Most-used keys" in r.stdout
    assert "Powered by Hydra" not in r.stdout
