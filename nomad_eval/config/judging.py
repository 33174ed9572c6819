"""The judges' settings (judges/calibration.py) from the run's config."""

from __future__ import annotations

from pathlib import Path

from nomad_eval.config.run_config import RunConfig
from nomad_eval.config.sections import JudgingKeys
from nomad_eval.config.settings import resolved
from nomad_eval.judges.calibration import JudgeSettings, JudgingRules


def judging_rules(judging: JudgingKeys) -> JudgingRules:
    return JudgingRules(judging.min_agreement, judging.gate_on, judging.max_order_flip_rate,
                        judging.max_verbosity_shift, judging.min_abstention_faithful)


def judge_settings(config: RunConfig) -> JudgeSettings:
    resolved(config)
    j = config.judging
    return JudgeSettings(
        model=config.judge.model.spec(), model_name=config.judge.model.name, rubrics=config.judge.rubrics,
        rubrics_dir=Path(j.rubrics_dir), calibration_dir=Path(j.calibration_dir), rules=judging_rules(j),
        seed=config.seed, retries=j.retries, max_tokens=j.max_tokens, quiet=config.quiet,
        generator=config.model.text("name") or None, fail_under=dict(config.gate.fail_under or {}))
