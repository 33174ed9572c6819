"""The judges of a generation run: each rubric's verdicts with intervals, and their prediction-powered correction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.case import Case
from nomad_eval.base.errors import NomadError
from nomad_eval.core.summary import add_judge_intervals
from nomad_eval.judges.run_judges import judge_cases, judge_chat, rubrics
from nomad_eval.report.schema import Report
from nomad_eval.run.labels import judge_corrected, read_labels
from nomad_eval.run.settings import judge_settings


def judge_all(cfg: DictConfig, cases: list[Case], passages: list[list[str]], cache: ResponseCache | None
              ) -> dict[str, dict[str, Any]]:
    """Each rubric's verdicts with their intervals; empty without rubrics."""
    if not cfg.judge.rubrics:
        return {}
    jchat = judge_chat(judge_settings(cfg), cache)
    judges = judge_cases(judge_settings(cfg), cases, passages, jchat)
    jchat.model.close()
    add_judge_intervals(judges, cases, {r.name: max(r.scale) for r in rubrics(judge_settings(cfg))},
                        int(cfg.stats.resamples), int(cfg.seed))
    return judges


def corrected_judges(cfg: DictConfig, report: Report, cases: list[Case], out: Path
                     ) -> dict[str, dict[str, Any]]:
    """Each judge mean beside its prediction-powered correction, from `judging.labels` (or the run directory's own
    judge_labels.jsonl, as `tier=labels` writes it); with no labels, each says it is uncorrected."""
    path = Path(cfg.judging.labels) if cfg.judging.get("labels") else out / "judge_labels.jsonl"
    labels = read_labels(path) if path.exists() else []
    if cfg.judging.get("labels") and not path.exists():
        raise NomadError(f"judging.labels={path}: no such file", 2)
    return judge_corrected(report, cases, labels, rubrics(judge_settings(cfg)))
