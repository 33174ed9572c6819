"""The composed config becomes one typed, frozen RunConfig at the entry, and the settings the layers below take are
built from it exactly as they were from the composed config."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from pydantic import ValidationError

from nomad_eval.base.errors import NomadError
from nomad_eval.cli.config_check import check_config
from nomad_eval.config import RunConfig
from nomad_eval.config import settings as typed_settings
from nomad_eval.config.tiers import KINDS, RetrievalTier, Tier
from nomad_eval.run import settings as composed_settings
from tests.conftest import MINI, compose_cfg
from tests.test_config_defaults import COMBINATIONS, _composed


@pytest.mark.parametrize("overrides", COMBINATIONS, ids=" ".join)
def test_every_combination_is_typed_with_the_settings_the_composed_config_gave(
        tmp_path: Path, overrides: list[str]) -> None:
    cfg = OmegaConf.create(copy.deepcopy(_composed(tuple(overrides))))
    for item in (*MINI, f"paths.data_dir={tmp_path / 'data'}", f"paths.run_dir={tmp_path / 'run'}"):
        key, _, value = item.partition("=")
        OmegaConf.update(cfg, key, value)
    config = check_config(cfg)
    assert type(config.tier) is KINDS.get(str(cfg.tier.name), Tier)
    assert typed_settings.run_settings(config) == composed_settings.run_settings(cfg)
    assert typed_settings.judge_settings(config) == composed_settings.judge_settings(cfg)
    assert typed_settings.gate_settings(config) == composed_settings.gate_settings(cfg)


def test_the_typed_config_is_frozen_and_reads_by_attribute(tmp_path: Path) -> None:
    config = check_config(compose_cfg(*MINI, f"paths.data_dir={tmp_path}", "threshold=0.4", "tier.ks=[1,2]"))
    assert isinstance(config, RunConfig) and isinstance(config.tier, RetrievalTier)
    assert (config.threshold, config.ks, config.tier.target) == (0.4, [1, 2], "nomad_eval.tiers.retrieval.run")
    assert config.pipeline.top_k == 5 and config.compare.headline_k == 5 and config.paths.data_dir == str(tmp_path)
    with pytest.raises(ValidationError):
        config.seed = 3  # type: ignore[misc]


@pytest.mark.parametrize(("override", "named"), [
    ("compare.replay_max=many", "compare.replay_max='many': Input should be a valid integer"),
    ("plan.drop=x", "plan.drop='x': Input should be a valid number"),
    ("mode.modes=3", "mode.modes=3: Input should be a valid tuple"),
])
def test_a_bad_value_of_a_typed_key_is_named_with_its_key(override: str, named: str) -> None:
    with pytest.raises(NomadError) as exc:
        check_config(compose_cfg(*MINI, override))
    assert exc.value.exit_code == 2 and named in str(exc.value)


def test_a_number_given_for_a_name_is_read_as_its_text() -> None:
    config = check_config(compose_cfg(*MINI, "promote.variant=2", "compare.reference=3"))
    assert (config.promote.variant, config.compare.reference) == ("2", "3")
