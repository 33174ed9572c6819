"""Labels on a run's judged answers and what they correct: a person's verdicts (tier=labels collects them) turn
the judge's mean into the prediction-powered estimate per judge metric (nomad_eval/core/ppi.py). A label applies
only to the same answer in a run with the same set of answers; when some labelled answers have changed, the rest
are no longer a random sample and the correction is refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from nomad_eval.base.errors import Defect, InvalidInput, first_error
from nomad_eval.core.ppi import NULL_SCORE, JudgeCorrected, corrected_mean
from nomad_eval.judges.judge import Rubric
from nomad_eval.judges.run_judges import by_rule
from nomad_eval.metrics.registry import MetricName
from nomad_eval.records import AnswerCase
from nomad_eval.report.io import read_jsonl
from nomad_eval.report.schema import Report


class Label(BaseModel):
    """One line of a labels file: a person's verdict on one judged answer, under one rubric version."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    fingerprint: StrictStr
    id: StrictStr
    mode: StrictStr
    repeat: StrictInt
    rubric: StrictStr                   # rubric name and version, e.g. faithfulness-v2
    text_hash: StrictStr                # of the labelled question, injected chunk ids and answer
    population: StrictStr               # of the answers the sample was drawn from (population_hash)
    label: StrictInt | None             # None: the person skipped it
    scale: list[StrictInt] = Field(min_length=2)
    run: str = ""                       # where it was labelled from, for people
    seed: int | None = None
    labelled_at: str = ""


def text_hash(case: AnswerCase) -> str:
    material = [case.query, list(case.injected), case.answer]
    return hashlib.sha256(json.dumps(material, ensure_ascii=False).encode()).hexdigest()[:16]


def population_hash(cases: list[AnswerCase]) -> str:
    """Names the set of answers a sample is drawn from: labels are a random sample of this set and no other."""
    keys = sorted(f"{c.id}#{c.repeat}" for c in cases)
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:16]


def label_key(fingerprint: str, rubric: str, case: AnswerCase) -> tuple[str, str, str, int, str]:
    return fingerprint, case.id, case.mode, case.repeat, rubric


def read_labels(path: Path) -> list[Label]:
    out, defects = [], []
    for n, row in enumerate(read_jsonl(path), 1):
        try:
            out.append(Label.model_validate(row))
        except ValidationError as exc:
            defects.append(Defect(str(path), n, first_error(exc)))
    if defects:
        raise InvalidInput(defects)
    return out


def judged(cases: list[AnswerCase], rubric: Rubric, mode: str) -> list[AnswerCase]:
    """The cases a judge metric is the mean over: this mode's, less those a rule leaves without a verdict (a
    correct refusal has no question to address). A case the judge could not score stays: it is part of the run."""
    return [c for c in cases
            if c.mode == mode and ((rule := by_rule(rubric, c)) is None or rule.verdict is not None)]


def draw_sample(cases: list[AnswerCase], seed: int, size: int) -> list[AnswerCase]:
    """`size` questions in a seeded random order, one randomly chosen repeat of each. Every draw is made for every
    question before any is taken, so a larger `size` extends a smaller one's sample instead of replacing it."""
    by_question: dict[str, list[AnswerCase]] = {}
    for c in sorted(cases, key=lambda c: (c.id, c.repeat)):
        by_question.setdefault(c.id, []).append(c)
    ids = sorted(by_question)
    rng = np.random.default_rng(seed)
    order, picks = rng.permutation(len(ids)), rng.random(len(ids))
    return [by_question[ids[i]][int(picks[i] * len(by_question[ids[i]]))] for i in order[:size]]


def matching(labels: Sequence[Label], fingerprint: str, rubric: str, mode: str,
             population: list[AnswerCase]) -> tuple[dict[tuple[str, str, str, int, str], Label], int]:
    """The labels that stand for answers of `population`, by key (the last line for a key wins, so an answer
    labelled again replaces its old label), and how many of this fingerprint, rubric and mode do not: the answer
    has changed since, or the sample was drawn from another set of answers (other goldens, tags, limit, repeats).
    """
    index = {label_key(fingerprint, rubric, c): c for c in population}
    drawn_from = population_hash(population)
    latest = {(lab.fingerprint, lab.id, lab.mode, lab.repeat, lab.rubric): lab for lab in labels
              if (lab.fingerprint, lab.rubric, lab.mode) == (fingerprint, rubric, mode)}
    good = {k: lab for k, lab in latest.items()
            if lab.population == drawn_from and k in index and text_hash(index[k]) == lab.text_hash}
    return good, len(latest) - len(good)


def judge_corrected(report: Report, cases: list[AnswerCase], labels: Sequence[Label],
                    rubrics: Sequence[Rubric]) -> dict[str, JudgeCorrected]:
    """Per judge metric of a report ("<mode>.<rubric>"): the judge mean beside the prediction-powered estimate,
    from labels on exactly this run's answers (same fingerprint, set of answers, rubric version and text)."""
    fingerprint = report.identity.fingerprint if report.identity else ""
    by_name = {r.name: r for r in rubrics}
    out: dict[str, JudgeCorrected] = {}
    for metric, section in report.answer_part().judges.items():
        parsed = MetricName.parse(metric)
        mode, name = parsed.mode, parsed.family
        rubric = by_name.get(name)
        if rubric is None or mode is None:
            continue
        top = max(rubric.scale)
        population = judged(cases, rubric, mode)
        scores: dict[str, float | None] = {}
        groups: dict[str, str] = {}
        for c in population:
            key = f"{c.id}#{c.repeat}"
            v = c.judges.get(name)
            scores[key], groups[key] = (None if v is None else v / top), c.id
        good, stale = matching(labels, fingerprint, str(section.get("rubric")), mode, population)
        human = {f"{lab.id}#{lab.repeat}": lab.label / max(lab.scale) for lab in good.values()
                 if lab.label is not None}
        ordered = sorted(rubric.scale)
        step = min(b - a for a, b in zip(ordered, ordered[1:], strict=False)) / top
        result = corrected_mean(scores, human, groups, step=step)
        if stale:
            # The labels left are those whose answers did not change, which is no longer a random sample.
            result = replace(result, status="refused", estimate=None, low=None, high=None,
                             reason=f"uncorrected: {stale} label(s) are for answers this run does not have (changed "
                                    "since, or drawn from other questions): the rest are not a random sample of "
                                    "this run's answers; label it with tier=labels")
        skipped = sum(lab.label is None for lab in good.values())
        out[metric] = JudgeCorrected(**result.as_dict(), skipped=skipped, stale_labels=stale, null_score=NULL_SCORE)
    return out
