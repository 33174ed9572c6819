"""Judging a generation run's cases, and the calibration gate that decides whether a judge may gate CI."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hydra.utils import instantiate

from nomad_eval.backends.base import Identity
from nomad_eval.backends.response_cache import CachedChat, ResponseCache
from nomad_eval.base.console import map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.judges.calibration import (
    BATTERY_FIGURES,
    JudgeSettings,
    find_calibration,
    gate_rule,
    judge_identity,
    same_family_warning,
)
from nomad_eval.judges.judge import Judgement, Rubric, judge, load_rubric, wants_weights
from nomad_eval.records import AnswerCase
from nomad_eval.records.sections import CalibrationStatus, JudgeEntry, JudgeSection


@dataclass
class _Tally:
    """A judge entry while its verdicts are counted."""

    rubric: str
    calibration: CalibrationStatus
    weighted: bool
    values: list[float] = field(default_factory=list)
    values_weighted: list[float] = field(default_factory=list)
    unparseable: int = 0
    rejected: int = 0
    by_rule: int = 0

    def entry(self) -> JudgeEntry:
        out = JudgeEntry(rubric=self.rubric, unparseable=self.unparseable, rejected=self.rejected,
                         by_rule=self.by_rule, calibration=self.calibration, n=len(self.values),
                         mean=_mean(self.values))
        if self.weighted:
            out["n_weighted"] = len(self.values_weighted)
            out["mean_weighted"] = _mean(self.values_weighted)
        return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rubrics(s: JudgeSettings) -> list[Rubric]:
    return [load_rubric(s.rubrics_dir, name) for name in s.rubrics]


def judge_chat(s: JudgeSettings, cache: ResponseCache | None) -> CachedChat:
    model = instantiate(dict(s.model))
    model.preflight()
    return CachedChat(model, cache)


def by_rule(rubric: Rubric, case: AnswerCase) -> Judgement | None:
    """Decisions that need no judge: a statement of inability to answer is always faithful."""
    if rubric.name == "faithfulness" and case.refused:
        return Judgement(max(rubric.scale), "a refusal makes no claim", 0, by_rule=True)
    if rubric.name == "relevance" and case.expect_refusal and case.refused:
        return Judgement(None, "a correct refusal has no question to address", 0, by_rule=True)
    return None


def judge_cases(s: JudgeSettings, cases: list[AnswerCase], passages: list[list[str]], chat: CachedChat
                ) -> JudgeSection:
    """Adds `judges` (verdicts) to each case, and `judges_weighted` for graded rubrics (the probability-weighted
    score, null where the judge's backend gives no token probabilities); returns the report section, keyed
    "<mode>.<rubric>". Up to the judge model's `concurrency` requests are in flight at once."""
    chosen = rubrics(s)
    tasks = [(rubric, i) for rubric in chosen for i in range(len(cases))]

    def work(task: tuple[Rubric, int]) -> Judgement:
        rubric, i = task
        case = cases[i]
        return by_rule(rubric, case) or judge(chat, rubric, case.query, passages[i], case.answer,
                                              s.seed, s.retries, s.max_tokens,
                                              case.repeat)

    # In task order, so cases and the section read the same whatever finished first; an unreachable judge stops
    # the run, and the verdicts already given stay in the cache.
    results = map_in_order(work, tasks, int(chat.model.concurrency), "judging", s.quiet)
    section: dict[str, _Tally] = {}
    calibration = {r.key: calibration_status(s, r, chat.identity()) for r in chosen}
    for (rubric, i), j in zip(tasks, results, strict=True):
        cases[i] = _record(rubric, cases[i], j, section, calibration[rubric.key])
    return {key: tally.entry() for key, tally in section.items()}


def _record(rubric: Rubric, case: AnswerCase, j: Judgement, section: dict[str, _Tally],
            calibration: CalibrationStatus) -> AnswerCase:
    """The case with the verdict written on it; the verdict counted in its `<mode>.<rubric>` entry."""
    verdicts: dict[str, object] = {"judges": {**case.judges, rubric.name: j.verdict}}
    key = f"{case.mode}.{rubric.name}"
    weighted = wants_weights(rubric)
    if weighted:
        verdicts["judges_weighted"] = {**case.judges_weighted, rubric.name: j.score_weighted}
    s = section.setdefault(key, _Tally(rubric.key, calibration, weighted))
    if j.by_rule:
        s.by_rule += 1
    elif j.rejected:
        s.rejected += 1
    elif j.verdict is None:
        s.unparseable += 1
    if j.verdict is not None:
        s.values.append(j.verdict / max(rubric.scale))
    if j.score_weighted is not None:
        # On the same 0..1 scale as `mean`, so the two read side by side.
        s.values_weighted.append(j.score_weighted / max(rubric.scale))
    return case.model_copy(update=verdicts)


def calibration_status(s: JudgeSettings, rubric: Rubric, identity: Identity | None = None) -> CalibrationStatus:
    """The calibration a gate on this rubric and judge reads (same rubric version, judge backend, model and
    weights, unchanged labels file), the gate's decision on it, and a warning when judge and generator share a
    model family. `identity`: the judge's, when a caller already holds the model."""
    folder = s.calibration_dir
    warning = same_family_warning(s.model_name, [s.generator] if s.generator else [])
    warnings = [warning] if warning else []
    if not any(folder.glob(f"{rubric.key}--*.json")):  # nothing to match: no need to ask the judge who it is
        return CalibrationStatus(warnings=warnings, calibrated=False,
                                 reason=f"no calibration report for {rubric.key} in {folder}")
    judge_id = judge_identity(identity if identity is not None else instantiate(dict(s.model)).identity())
    cal, why = find_calibration(folder, rubric.key, judge_id)
    if cal is None:
        return CalibrationStatus(warnings=warnings, calibrated=False, reason=why)
    ok, why = gate_rule(cal, s.rules)
    battery = {k: v for k, v in (cal.get("battery") or {}).items() if k in BATTERY_FIGURES}
    return CalibrationStatus(warnings=warnings, calibrated=ok, reason=why, file=Path(cal["path"]).name,
                             n=cal.get("n"), agreement=cal.get("agreement"), coverage=cal.get("coverage"),
                             kappa=cal.get("kappa"), battery=battery)


def check_judge_gates(s: JudgeSettings) -> None:
    """A judge metric may gate only when a calibration of this very judge on unchanged labels agrees with humans;
    refuse before any work."""
    for name in s.fail_under:
        if not str(name).startswith("judge."):
            continue
        rubric_name = str(name).rsplit(".", 1)[-1]
        if rubric_name not in s.rubrics:
            raise NomadError(f"gate on {name} refused: judge {rubric_name!r} is not enabled (judge={rubric_name})", 2)
        status = calibration_status(s, load_rubric(s.rubrics_dir, rubric_name))
        if not status["calibrated"]:
            raise NomadError(f"gate on {name} refused: the judge is not calibrated — {status['reason']}. "
                             f"Run tier=calibrate judge={rubric_name} calibrate.labels=<labels.jsonl>, then file "
                             "it with calibrate.file=<that run dir>.", 2)
