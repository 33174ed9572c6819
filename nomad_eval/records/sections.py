"""The typed sections a report holds that are built below report/: a judge section (judges/run_judges.py) with its
calibration status (judges/calibration.py), repeats=auto's per-question table (run/generation_auto.py), and what an
app served counted against the corpus (harness/served.py).
Here, on the records' floor, so the report's models read them without importing the judges or the harness.
typing_extensions' TypedDict: pydantic reads typing's only from Python 3.12."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired

from typing_extensions import TypedDict


class CalibrationStatus(TypedDict):
    """What a judge section of a report says of its calibration: the gate's decision on it, and its figures when
    one was found (as its file holds them)."""

    warnings: list[str]
    calibrated: bool
    reason: str
    file: NotRequired[str]
    n: NotRequired[int | None]
    # The figures as the calibration file holds them (judges/agreement.py's FigureJson, judges/battery.py's
    # BatteryFigures), carried as they are: a report keeps whatever the file it was judged against held.
    agreement: NotRequired[Mapping[str, object] | None]
    coverage: NotRequired[Mapping[str, object] | None]
    kappa: NotRequired[Mapping[str, object] | None]
    battery: NotRequired[Mapping[str, object]]


class JudgeEntry(TypedDict):
    """One `<mode>.<rubric>` entry of a report's judge section, in the order report.json holds its keys; the
    intervals are added after judging (core/summary.py), the weighted figures only for graded rubrics."""

    rubric: str
    # Every run writes these; a report written before them (schema version 1) may hold only the rubric.
    unparseable: NotRequired[int]
    rejected: NotRequired[int]
    by_rule: NotRequired[int]
    calibration: NotRequired[CalibrationStatus]
    n: NotRequired[int]
    mean: NotRequired[float | None]
    n_weighted: NotRequired[int]
    mean_weighted: NotRequired[float | None]
    low: NotRequired[float | None]
    high: NotRequired[float | None]
    questions: NotRequired[int]
    low_weighted: NotRequired[float | None]
    high_weighted: NotRequired[float | None]


JudgeSection = dict[str, JudgeEntry]


class AdaptiveRow(TypedDict):
    """One question's line of a report's repeats=auto table (details.adaptive), as run/generation_auto.py makes
    it."""

    key: str
    calls: int
    answers: int
    passes: int
    pass_rate: float | None
    low: float
    high: float
    stopped: str | None


class ParitySummary(TypedDict):
    """What the app served, counted against the corpus (a report's served_index)."""

    passages: int
    current: Share
    stale: Share
    foreign: Share
    stale_documents: dict[str, int]
    foreign_documents: dict[str, int]


class Share(TypedDict):
    """A share of the served passages with its Wilson 95% interval (value, low, high None when none was served)."""

    value: float | None
    count: int
    n: int
    low: float | None
    high: float | None
    method: str
