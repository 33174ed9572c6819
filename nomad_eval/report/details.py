"""What a report holds beyond the envelope every tier shares: one typed part per kind of run, told apart by its
`tier` (report/schema.py's `Report.details`).

The envelope (identity, provenance, config, system, metrics, intervals, gate, warnings, timings, counts) is what
compare, merge and the gate read for any tier; a part here is what only one tier measures and its views render.
tier=app writes `tier: generation` in the envelope (compare pairs it with generation runs) and `app` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from nomad_eval.metrics.separation import SeparationRow
from nomad_eval.records.sections import AdaptiveRow, JudgeSection, ParitySummary


class PositionPoint(BaseModel):
    """Correctness with the relevant passage at one position of the prompt (tier=position)."""

    position: int
    n: int                       # questions (repeats averaged first)
    correctness: float | None
    low: float | None            # 95% interval: Wilson for 0/1 values, a bootstrap over questions otherwise
    high: float | None
    method: str
    mock: float | None = None    # the extractive ceiling on exactly the same prompts


class PositionCurve(BaseModel):
    """The "lost in the middle" curve: one relevant passage moved through N-1 fixed distractors."""

    passages: int                # N
    points: list[PositionPoint]
    questions: int               # questions in the curve, the same at every position
    best: int | None = None
    worst: int | None = None
    delta: float | None = None   # correctness(worst) - correctness(best), paired by question
    delta_low: float | None = None
    delta_high: float | None = None
    p_value: float | None = None
    test: str | None = None
    skipped: dict[str, list[str]] = Field(default_factory=dict)  # why -> question ids left out


class AttackRate(BaseModel):
    """One attack family's success rate in one mode (attack suites, issue 17): n cases, a Wilson 95% interval."""

    family: str
    mode: str
    n: int                       # cases measured (questions x repeats)
    successes: int
    rate: float | None
    low: float | None
    high: float | None
    method: str = "wilson"
    exposed: int = 0             # cases whose prompt held a chunk of a planted document
    mock: float | None = None    # the mock (a copier) on exactly the same prompts


class SizeSummary(BaseModel):
    """A size over a mode's answers, as upstream reports it (mean and population standard deviation over every
    answer, n answers), with its 95% interval over questions (each question's repeats averaged first)."""

    mean: float
    stddev: float
    n: int                      # answers (questions x repeats)
    questions: int
    low: float | None = None    # None with fewer than two questions
    high: float | None = None


class InfraFailure(BaseModel):
    """A call the infrastructure failed (timeout, unreachable, HTTP error, malformed after retries)."""

    key: str                    # mode:question id
    repeat: int
    reason: str


class Decomposition(BaseModel):
    """Generation with all three modes: where the points went (the model itself, retrieval, RAG not helping)."""

    oracle: float | None
    e2e: float | None
    noretrieval: float | None
    retrieval_gap: float | None  # oracle - e2e
    rag_lift: float | None       # e2e - noretrieval
    diagnosis: list[str] = Field(default_factory=list)


class RankRow(BaseModel):
    """Correctness with the relevant passage at one rank of the prompt: n questions (repeats averaged first)."""

    n: int
    cases: int | None = None       # case records (repeats); None in reports from before it was counted
    correctness: float | None
    low: float | None = None       # 95% interval; None in reports from before intervals, or with no question
    high: float | None = None
    method: str = "wilson"         # wilson for 0/1 values, bootstrap where a question's repeats disagree


class RankAnalysis(BaseModel):
    """e2e: correctness by the rank of the relevant passage in the prompt, and whether it was used."""

    by_rank: dict[str, RankRow]    # "1", "2", ... and "not injected"
    context_recall: float | None   # share of the questions whose relevant passage reached the prompt
    retrieved_but_ignored_rate: float | None
    retrieved_but_ignored: bool    # high recall with low correctness: the answer was there and not used


class CauseRow(BaseModel):
    """One failure cause in one mode: its questions, their share of the mode's failed questions (n) and a Wilson
    95% interval, and the case records (repeats) that carry it."""

    count: int
    n: int | None = None
    share: float | None = None
    low: float | None = None
    high: float | None = None
    cases: int | None = None


class ModeCauses(BaseModel):
    questions: int
    failed: int
    cases: int | None = None         # case records (repeats), of all questions and of the failed ones
    failed_cases: int | None = None
    labels: dict[str, CauseRow] = Field(default_factory=dict)


class CauseCounts(BaseModel):
    """One cause per failed question, counted per mode (core/causes.py's cause_counts)."""

    unit: str = ""
    precedence: list[str] = Field(default_factory=list)  # the rules in the order they are tried
    names: dict[str, str] = Field(default_factory=dict)  # cause -> its label
    by_mode: dict[str, ModeCauses] = Field(default_factory=dict)
    questions: dict[str, str] = Field(default_factory=dict)  # mode:id -> its cause


class RetrievalDetails(BaseModel):
    tier: Literal["retrieval"] = "retrieval"
    separation: list[SeparationRow] = Field(default_factory=list)
    # Each pipeline stage switched off (or the glossary on/off): the headline metrics it leaves.
    ablation: dict[str, dict[str, float | None]] = Field(default_factory=dict)


class AnswerDetails(BaseModel):
    """What generation and app runs share: answers judged, failures explained, attacks counted."""

    unstable: list[str] = Field(default_factory=list)  # question keys whose repeats disagree
    # Calls the infrastructure failed: neither a failed answer nor a pass; past gate.max_infra the run is
    # "not measured".
    infra: list[InfraFailure] = Field(default_factory=list)
    # Judge verdicts stand apart: they never enter `metrics` or the deterministic means.
    judges: JudgeSection = Field(default_factory=dict)
    # Per judge metric: the judge mean beside its prediction-powered correction from human labels, or why none.
    # As written (core/ppi.py's JudgeCorrected); read back as it is, since earlier reports hold fewer keys.
    judge_corrected: dict[str, Mapping[str, object]] = Field(default_factory=dict)
    causes: CauseCounts = Field(default_factory=CauseCounts)
    attacks: list[AttackRate] = Field(default_factory=list)  # attack suites: success rate per family and mode
    repeats_reason: str | None = None  # why each prompt got `counts.repeats` answers


class GenerationDetails(AnswerDetails):
    tier: Literal["generation"] = "generation"
    # repeats=auto: each question's calls, pass rate, anytime-valid interval and why it stopped asking.
    adaptive: list[AdaptiveRow] = Field(default_factory=list)
    decomposition: Decomposition | None = None
    # The extractive ceiling on the same prompts, per mode and metric (empty when the model is the mock).
    mock_line: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    chars_per_token: float | None = None
    position: RankAnalysis | None = None  # e2e measured: correctness by the relevant passage's rank
    # Per mode: meanPromptTokens (the estimate the budget used) and meanAnswerLength (characters).
    sizes: dict[str, dict[str, SizeSummary]] = Field(default_factory=dict)


class AppDetails(AnswerDetails):
    tier: Literal["app"] = "app"
    served_index: ParitySummary | None = None  # harness/served.py's; None: the app served no passage with text


class PositionDetails(BaseModel):
    tier: Literal["position"] = "position"
    curve: PositionCurve | None = None
    chars_per_token: float | None = None


Details = Annotated[RetrievalDetails | GenerationDetails | AppDetails | PositionDetails, Field(discriminator="tier")]
