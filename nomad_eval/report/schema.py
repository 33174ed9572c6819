"""The report a run leaves behind: a versioned pydantic schema, read back by compare and merge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nomad_eval.data.anchors import GoldenAnchors
from nomad_eval.metrics.registry import MetricName
from nomad_eval.metrics.separation import SeparationRow
from nomad_eval.metrics.upstream.separation import Distribution

SCHEMA_VERSION = 1


class Identity(BaseModel):
    """What a run measured on and with. TASK_FIELDS (with the fingerprint) must match for two runs to be
    comparable; the rest describes the system under test, which compare reports instead of refusing."""

    model_config = ConfigDict(extra="forbid")
    fingerprint: str
    goldens_hash: str
    suite: str
    tags: list[str] = Field(default_factory=list)
    limit: int | None = None
    top_k: int | None = None
    threshold: float | None = None
    min_final_score: float | None = None
    mode: str | None = None
    model: str | None = None
    embedder: str
    pipeline: str
    judges: list[str] = Field(default_factory=list)  # rubric name and version, e.g. faithfulness-v1
    distractors: str | None = None  # the distractor set mixed into the store (also in the fingerprint)
    measures: list[str] = Field(default_factory=list)  # the cutoffs measured, e.g. ["@1", "@3", "@5"]


# Differing in any of these (or in the tier) means the runs measured different things: exit 2. The corpus, the
# goldens' contents and every setting may differ: compare names those changes and compares across them.
TASK_FIELDS = ("suite", "tags", "limit", "mode", "measures")


class Subject(BaseModel):
    """What a run measured on, item by item, so compare can name what changed between two runs: each document's
    content hash and chunk count (the corpus's own documents, not distractors), each golden's judgement hash."""

    documents: dict[str, str] = Field(default_factory=dict)   # doc id -> sha256 of its text (12 hex)
    chunks: dict[str, int] = Field(default_factory=dict)      # doc id -> chunks made of it
    goldens: dict[str, str] = Field(default_factory=dict)     # golden id -> data/golden.judgement_hash
    # golden id -> where its mustInclude patterns match (data/anchors.py); empty in reports written before them
    anchors: dict[str, GoldenAnchors] = Field(default_factory=dict)


class GateMetric(BaseModel):
    """One gated metric's outcome, as every record of a run states it."""

    name: str
    outcome: str                 # regression | within tolerance | not measured | too small to tell
    baseline: float | None
    run: float | None
    delta: float | None
    n: int                       # questions paired
    tolerance: str
    noise: float | None = None   # run-to-run standard error of the delta, from the repeats (0: deterministic)
    low: float | None = None     # question sampling: 95% interval of the delta
    high: float | None = None
    p_holm: float | None = None  # question sampling: one-sided paired test, Holm across the gated metrics
    detectable: float | None = None  # the change in general the suite detects at 80% power (tier=plan's figure)
    reason: str = ""


class GateFloor(BaseModel):
    metric: str
    floor: float
    value: float | None
    broken: bool
    reason: str = ""
    n: int | None = None          # the value's questions (judged answers for a judge floor) and 95% interval
    low: float | None = None
    high: float | None = None


class WaterfallPart(BaseModel):
    """One part of a gated metric's delta: a change (or the interaction, or what the replay does not reproduce)
    and the questions it moved."""

    change: str
    value: float
    questions: list[str] = Field(default_factory=list)


class Gate(BaseModel):
    """The verdict of a run, written into report.json, report.md, report.html and junit.xml alike."""

    verdict: str                 # pass | regression | floor broken | not measured | not comparable
    cause: str                   # one line: what decided the verdict
    exit_code: int
    baseline: str | None = None  # the baseline compared with, and why that one
    baseline_reason: str | None = None
    changes: list[str] = Field(default_factory=list)       # what differs from the baseline, baseline -> run
    questions: dict[str, list[str]] = Field(default_factory=dict)  # added / removed / changed / not measured
    metrics: list[GateMetric] = Field(default_factory=list)
    floors: list[GateFloor] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    newly_failing: list[str] = Field(default_factory=list)  # question keys that passed in the baseline, fail now
    # Goldens whose evidence is gone or relocated (data/anchors.py): "golden out of date", never a regression.
    stale: list[str] = Field(default_factory=list)
    stale_warn: bool = False  # compare.stale=warn: out-of-date goldens named, not failed
    evidence: dict[str, list[str]] = Field(default_factory=dict)  # status -> golden ids, for all but intact
    # Each flipped question with the change that flipped it, by replay (run/attribute.py), and notes on what
    # was not replayed; per gated metric the delta split by change, parts + interaction + not reproduced = delta.
    attribution: list[str] = Field(default_factory=list)
    waterfall: dict[str, list[WaterfallPart]] = Field(default_factory=dict)


class MetricInterval(BaseModel):
    """A headline number's uncertainty: how many questions it stands on and a seeded 95% bootstrap interval."""

    n: int                      # questions (not cases) the mean is over
    low: float | None           # None when n < 2: one question has no spread to resample
    high: float | None
    level: float = 0.95
    clusters: int | None = None  # source documents resampled, when the interval is clustered


class Provenance(BaseModel):
    git_commit: str | None
    git_dirty: bool | None
    # sha256 (16 hex) of `git diff HEAD`: on a dirty tree, which edits; two dirty runs match only with the same.
    git_diff: str | None = None
    versions: dict[str, str]
    python: str
    created: str
    git_branch: str | None = None  # None: detached HEAD, or not a git checkout
    # The machine, for context only (as upstream records it): never a reason two runs differ in score.
    platform: dict[str, str] = Field(default_factory=dict)
    # The project's own repository (its corpus, goldens, config and code): git_* above are the tool's checkout.
    # None: the project is not in a git repository (or git is not installed).
    project_commit: str | None = None
    project_branch: str | None = None  # None also on a detached HEAD
    project_dirty: bool | None = None


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


class UpstreamView(BaseModel):
    """Upstream NOMAD's metrics by its own definitions (metrics/upstream/), apart from `metrics`: names carry the
    `upstream.` prefix, cut-offs include upstream's 1, 3, 5 and 10 whatever top_k, and the score separation is
    over the retrieved chunks' raw cosines (docs/upstream-nomad.md)."""

    ks: list[int] = Field(default_factory=list)
    metrics: dict[str, float | None] = Field(default_factory=dict)
    intervals: dict[str, MetricInterval] = Field(default_factory=dict)
    metrics_by_tag: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    relevant_scores: Distribution | None = None
    irrelevant_scores: Distribution | None = None
    advice: list[str] = Field(default_factory=list)


class Report(BaseModel):
    schema_version: int = SCHEMA_VERSION
    tier: str
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    identity: Identity | None = None
    overrides: list[str] = Field(default_factory=list)  # the command-line overrides: a sweep's columns
    sweep_id: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    # The system under test, flat, files as content hashes: compare lists what differs (harness/system.py).
    system: dict[str, str] = Field(default_factory=dict)
    metrics: dict[str, float | None] = Field(default_factory=dict)
    # Every metric's n and 95% interval, keyed like `metrics`; a metric that is None here has no interval.
    intervals: dict[str, MetricInterval] = Field(default_factory=dict)
    metrics_by_tag: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    # Each tag's n and 95% interval for the columns its tables show (report/markdown.tag_columns).
    intervals_by_tag: dict[str, dict[str, MetricInterval]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    repeats_reason: str | None = None  # generation: why each prompt got `counts.repeats` answers
    # repeats=auto: each question's calls, pass rate, anytime-valid interval and why it stopped asking.
    adaptive: list[dict[str, Any]] = Field(default_factory=list)
    separation: list[SeparationRow] = Field(default_factory=list)
    ablation: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    # Generation: where the points went, the mock ceiling on the same prompts, questions that flip.
    decomposition: dict[str, Any] = Field(default_factory=dict)
    mock_line: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    unstable: list[str] = Field(default_factory=list)
    # Calls the infrastructure failed (timeout, unreachable, HTTP error, malformed after retries): question key,
    # repeat, reason. Neither a failed answer nor a pass; past gate.max_infra the run is "not measured".
    infra: list[dict[str, Any]] = Field(default_factory=list)
    chars_per_token: float | None = None
    # Judge verdicts stand apart: they never enter `metrics` or the deterministic means.
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # Per judge metric: the judge mean beside its prediction-powered correction from human labels, or why none.
    judge_corrected: dict[str, dict[str, Any]] = Field(default_factory=dict)
    position: dict[str, Any] = Field(default_factory=dict)
    position_curve: PositionCurve | None = None  # tier=position
    attacks: list[AttackRate] = Field(default_factory=list)  # attack suites: success rate per family and mode
    # Generation: one cause per failed question, counted per mode with shares of the failed (core/causes.py).
    causes: dict[str, Any] = Field(default_factory=dict)
    # Generation, per mode: meanPromptTokens (the estimate the budget used) and meanAnswerLength (characters).
    sizes: dict[str, dict[str, SizeSummary]] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)  # things the user should know that are not failures
    # tier=app: the passages the app served, counted current / stale / foreign against the corpus (harness/served.py).
    served_index: dict[str, Any] = Field(default_factory=dict)
    subject: Subject | None = None  # documents and goldens item by item: what compare names as changed
    upstream: UpstreamView | None = None  # retrieval: upstream NOMAD's definitions, kept apart from `metrics`
    gate: Gate | None = None        # the verdict (floors, and the compare when it ran)
    provenance: Provenance | None = None
    timings: dict[str, float] = Field(default_factory=dict)


def headline_k(report: Report) -> int:
    """The cutoff the gate's ranking metrics are read at (`compare.headline_k`), where this run measured it."""
    k = int((report.config.get("compare") or {}).get("headline_k") or 5)
    ks = sorted({cut for n in report.metrics if (cut := MetricName.parse(n).k) is not None})
    return k if k in ks or not ks else max(ks)
