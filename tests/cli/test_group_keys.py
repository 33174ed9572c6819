"""Keys and options of config groups checked against what the command line composes, before Hydra's raw errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from nomad_eval.base.paths import CONF, REPO
from nomad_eval.cli.suggest import group_key_problem
from tests.conftest import run_cli

DIRS = [REPO / "conf", CONF]


def test_a_key_of_another_tier_names_the_tier_that_has_it() -> None:
    problem = group_key_problem(["tier=generation", "tier.ks=[1,2]"], DIRS) or ""
    assert "tier=generation has no key `ks`" in problem and "`ks` is a key of tier=retrieval" in problem
    assert "max_tokens" in problem  # the keys it does have


@pytest.mark.parametrize("argv", [["tier.ks=[1,2]"], ["tier=retrieval", "tier.ks=[3]"],
                                  ["+experiment=ci", "tier.ks=[5]"], ["pipeline=nomad", "pipeline.top_k=3"],
                                  ["tier=retrieval,generation", "tier.ks=[1]"], ["tier=choice(retrieval,x)"],
                                  ["model@judge.model=smollm2", "judge.model.threads=2"]])
def test_keys_the_composed_option_has_pass(argv: list[str]) -> None:
    assert group_key_problem(argv, DIRS) is None


def test_the_judge_model_package_is_checked_against_its_own_choice() -> None:
    problem = group_key_problem(["model@judge.model=openai", "judge.model.threads=2"], DIRS) or ""
    assert "model@judge.model=openai has no key `threads`" in problem and "model=smollm2" in problem


def test_an_unknown_option_gets_the_nearest_one() -> None:
    assert "did you mean `model=smollm2`?" in (group_key_problem(["model=smollm"], DIRS) or "")
    assert "did you mean `+experiment=ci`?" in (group_key_problem(["+experiment=cii"], DIRS) or "")


def test_a_projects_own_option_counts(tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "mine.yaml").write_text("_target_: myretriever.retrieve\n_partial_: true\ntop_k: 5\n")
    assert group_key_problem(["pipeline=mine", "pipeline.top_k=3"], [CONF, tmp_path]) is None
    assert "pipeline=mine has no key `chunk_size`" in (
        group_key_problem(["pipeline=mine", "pipeline.chunk_size=3"], [CONF, tmp_path]) or "")


def test_the_command_line_exits_2_before_hydra(tmp_path: Path) -> None:
    r = run_cli("tier=generation", "tier.ks=[1,2]", f"paths.run_dir={tmp_path / 'run'}")
    assert r.returncode == 2, r.stderr
    assert "`ks` is a key of tier=retrieval" in r.stderr and "not in struct" not in r.stderr
    assert not (tmp_path / "run").exists()
