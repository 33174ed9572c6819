"""What a judge's calibration reads and files: the labelled examples (a JSONL file, checked line by line), each one
judged (calibration_cases.jsonl), and calibration.json with its agreement figures (tier=calibrate writes them)."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict, final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nomad_eval.base.atomic import JsonValue
from nomad_eval.base.errors import Defect, InvalidInput, first_error
from nomad_eval.judges.agreement import (
    FigureJson,
    Verdict,
)
from nomad_eval.judges.battery import BatteryFigures


class Label(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    rubric: str | None = None
    question: str
    chunks: list[str]
    answer: str
    label: int = Field(alias="label")
    generator: str | None = None  # the model that wrote the answer, when known: for the same-family warning


class LabelRow(TypedDict):
    """One labelled example judged: calibration_cases.jsonl."""

    id: str
    label: int
    verdict: Verdict                  # the first repeat's
    verdicts: list[Verdict]
    rejected: bool                    # refused by the judge's server


class Agreement(TypedDict):
    n: int
    parsed: int
    unparseable: int
    rejected: int
    agreement: FigureJson
    coverage: FigureJson
    agreement_parsed: FigureJson
    kappa: FigureJson
    spearman: FigureJson | None       # graded scales only
    flip_rate: FigureJson | None      # repeats > 1 only


@final
class NoBattery(TypedDict):
    """calibrate.battery_size=0: no battery figures."""


class Calibration(Agreement):
    """calibration.json: the judge's agreement with the labels, its battery, cost, and whether it may gate."""

    format: int
    rubric: str
    judge: dict[str, JsonValue]
    labels: dict[str, str | int]
    repeats: int
    seed: int
    resamples: int
    cost: dict[str, dict[str, float]]
    battery: BatteryFigures | NoBattery
    generators: list[str]
    warnings: list[str]
    created: str
    filed_as: str
    min_agreement: float
    gate_on: str
    calibrated: bool
    reason: str


def load_labels(path: Path, scale: list[int]) -> list[Label]:
    defects, out, seen = [], [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            lab = Label.model_validate_json(line)
        except ValidationError as exc:
            defects.append(Defect(str(path), n, first_error(exc)))
            continue
        if lab.label not in scale:
            defects.append(Defect(str(path), n, f"label {lab.label} is not on the rubric's scale {scale}", lab.id))
        if lab.id in seen:
            defects.append(Defect(str(path), n, f"duplicate id {lab.id!r}", lab.id))
        seen.add(lab.id)
        out.append(lab)
    if defects:
        raise InvalidInput(defects)
    return out
