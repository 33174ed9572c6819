"""The settings tests build from a composed config, as the entry builds them: the config typed once
(cli/config_check.py), then the builders every tier calls (nomad_eval/config/settings.py, judging.py, gating.py)."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from nomad_eval.cli.config_check import typed
from nomad_eval.config import RunConfig, gating, settings
from nomad_eval.config import judging as judge_config
from nomad_eval.config.sections import JudgingKeys
from nomad_eval.gate.settings import CompareSettings
from nomad_eval.harness.runtime import Runtime
from nomad_eval.judges.calibration import JudgeSettings, JudgingRules

__all__ = ["compare_settings", "judge_settings", "judging_rules", "runtime", "typed"]


def _typed(cfg: DictConfig | RunConfig) -> RunConfig:
    return cfg if isinstance(cfg, RunConfig) else typed(cfg)


def runtime(cfg: DictConfig | RunConfig) -> Runtime:
    return settings.runtime(_typed(cfg))


def judge_settings(cfg: DictConfig | RunConfig) -> JudgeSettings:
    return judge_config.judge_settings(_typed(cfg))


def compare_settings(cfg: DictConfig | RunConfig) -> CompareSettings:
    return gating.compare_settings(_typed(cfg))


def judging_rules(judging: DictConfig) -> JudgingRules:
    return judge_config.judging_rules(JudgingKeys.model_validate(OmegaConf.to_container(judging, resolve=True)))
