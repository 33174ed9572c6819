"""The judges of a generation run: each rubric's verdicts with intervals, and their prediction-powered correction."""

from __future__ import annotations

from pathlib import Path

from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.config.judging import judge_settings
from nomad_eval.core.ppi import JudgeCorrected
from nomad_eval.core.summary import add_judge_intervals
from nomad_eval.judges.run_judges import judge_cases, judge_chat, rubrics
from nomad_eval.records import AnswerCase
from nomad_eval.records.sections import JudgeSection
from nomad_eval.report.schema import Report
from nomad_eval.run.labels import judge_corrected, read_labels


def judge_all(config: RunConfig, cases: list[AnswerCase], passages: list[list[str]], cache: ResponseCache | None
              ) -> JudgeSection:
    """Each rubric's verdicts with their intervals; empty without rubrics."""
    if not config.judge.rubrics:
        return {}
    jchat = judge_chat(judge_settings(config), cache)
    judges = judge_cases(judge_settings(config), cases, passages, jchat)
    jchat.model.close()
    add_judge_intervals(judges, cases, {r.name: max(r.scale) for r in rubrics(judge_settings(config))},
                        int(config.stats.resamples), int(config.seed))
    return judges


def corrected_judges(config: RunConfig, report: Report, cases: list[AnswerCase], out: Path
                     ) -> dict[str, JudgeCorrected]:
    """Each judge mean beside its prediction-powered correction, from `judging.labels` (or the run directory's own
    judge_labels.jsonl, as `tier=labels` writes it); with no labels, each says it is uncorrected."""
    path = Path(config.judging.labels) if config.judging.labels else out / "judge_labels.jsonl"
    labels = read_labels(path) if path.exists() else []
    if config.judging.labels and not path.exists():
        raise NomadError(f"judging.labels={path}: no such file", 2)
    return judge_corrected(report, cases, labels, rubrics(judge_settings(config)))
