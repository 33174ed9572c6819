"""The composed config becomes one typed, frozen RunConfig at the entry, and the settings the layers below take are
built from it."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from pydantic import ValidationError

from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact
from nomad_eval.cli.config_check import check_config
from nomad_eval.config import RunConfig, gating, judging
from nomad_eval.config import settings as typed_settings
from nomad_eval.config.tiers import KINDS, OwnTier, RetrievalTier
from tests.conftest import MINI, compose_cfg
from tests.test_config_defaults import COMBINATIONS, _composed


@pytest.mark.parametrize("overrides", COMBINATIONS, ids=" ".join)
def test_every_combination_is_typed_with_the_settings_it_sets(
        tmp_path: Path, overrides: list[str]) -> None:
    cfg = OmegaConf.create(copy.deepcopy(_composed(tuple(overrides))))
    for item in (*MINI, f"paths.data_dir={tmp_path / 'data'}", f"paths.run_dir={tmp_path / 'run'}"):
        key, _, value = item.partition("=")
        OmegaConf.update(cfg, key, value)
    config = check_config(cfg)
    assert type(config.tier) is KINDS.get(str(cfg.tier.name), OwnTier)
    raw = OmegaConf.to_container(cfg, resolve=False)
    tree = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict) and isinstance(tree, dict)
    run = typed_settings.run_settings(config)
    assert run.config == redact(raw, tree)  # what reports record: resolved, secrets redacted
    assert (run.suite, run.data_dir, run.pipeline_target) == (tree["suite"], Path(tree["paths"]["data_dir"]),
                                                             tree["pipeline"]["_target_"])
    assert dict(run.embedder) == tree["embedder"] and run.store.lock_timeout == tree["store"]["lock_timeout"]
    judge = judging.judge_settings(config)
    assert (dict(judge.model), judge.rubrics) == (tree["judge"]["model"], tuple(tree["judge"]["rubrics"]))
    gate = gating.gate_settings(config)
    assert dict(gate.floors) == (tree["gate"]["fail_under"] or {})
    assert (gate.after_run, gate.compare.headline_k) == (tree["compare"]["after_run"], tree["compare"]["headline_k"])


def test_the_typed_config_is_frozen_and_reads_by_attribute(tmp_path: Path) -> None:
    config = check_config(compose_cfg(*MINI, f"paths.data_dir={tmp_path}", "threshold=0.4", "tier.ks=[1,2]"))
    assert isinstance(config, RunConfig) and isinstance(config.tier, RetrievalTier)
    assert (config.threshold, config.ks, config.tier.target) == (0.4, [1, 2], "nomad_eval.tiers.retrieval.measure")
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


def test_a_value_that_cannot_be_resolved_is_named_by_the_tier_that_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOMAD_TEST_UNSET_KEY", raising=False)
    config = check_config(compose_cfg(*MINI, "model=openai", "model.api_key=${oc.env:NOMAD_TEST_UNSET_KEY}"))
    # A tier that never reads the model (a compare) still has its config, the value kept as written.
    assert list(config.unresolved) == ["model.api_key"] and config.compare.headline_k == 5
    assert config.model.values["api_key"] == "${oc.env:NOMAD_TEST_UNSET_KEY}"
    with pytest.raises(NomadError) as exc:
        typed_settings.runtime(config)
    assert exc.value.exit_code == 2 and "model.api_key cannot be resolved" in str(exc.value)
