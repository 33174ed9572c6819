"""The report a run leaves behind: a versioned pydantic schema, read back by compare and merge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nomad_eval.data.anchors import GoldenAnchors
from nomad_eval.metrics.registry import MetricName, headline_names
from nomad_eval.metrics.upstream.separation import Distribution
from nomad_eval.report.details import (
    AnswerDetails,
    AppDetails,
    Details,
    GenerationDetails,
    PositionDetails,
    RetrievalDetails,
)
from nomad_eval.report.legacy import CURRENT, upgraded

SCHEMA_VERSION = CURRENT  # 2: the tier's own fields moved under `details` (report/legacy.py reads 1)


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
    noise_source: str = ""       # where that noise came from: the sides' repeats, or the questions' history
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
    """The envelope every tier writes (what compare, merge and the gate read) and `details`, the part only one
    kind of run measures (report/details.py). Version 1 kept every tier's fields flat beside the envelope:
    report/legacy.py reads those, one way."""

    schema_version: int = SCHEMA_VERSION
    tier: str
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    identity: Identity | None = None
    overrides: list[str] = Field(default_factory=list)  # the command-line overrides: a sweep's columns
    sweep_id: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # the resolved run config, as JSON
    # The system under test, flat, files as content hashes: compare lists what differs (harness/system.py).
    system: dict[str, str] = Field(default_factory=dict)
    metrics: dict[str, float | None] = Field(default_factory=dict)
    # Every metric's n and 95% interval, keyed like `metrics`; a metric that is None here has no interval.
    intervals: dict[str, MetricInterval] = Field(default_factory=dict)
    metrics_by_tag: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    # Each tag's n and 95% interval for the columns its tables show (tag_columns).
    intervals_by_tag: dict[str, dict[str, MetricInterval]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)  # things the user should know that are not failures
    subject: Subject | None = None  # documents and goldens item by item: what compare names as changed
    upstream: UpstreamView | None = None  # upstream NOMAD's definitions, kept apart from `metrics`
    gate: Gate | None = None        # the verdict (floors, and the compare when it ran)
    provenance: Provenance | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    details: Details | None = None  # the tier's own part; None for a failed run and tiers with none

    @model_validator(mode="before")
    @classmethod
    def _read_older(cls, data: Any) -> Any:
        return upgraded(data) if isinstance(data, dict) else data

    # Each kind's part, or an empty one of that kind when this report has another (a view renders nothing of it).
    def answer_part(self) -> AnswerDetails:
        """The generation or app part: judges, causes, attacks, unstable questions, infrastructure failures."""
        return self.details if isinstance(self.details, AnswerDetails) else AnswerDetails()

    def generation_part(self) -> GenerationDetails:
        return self.details if isinstance(self.details, GenerationDetails) else GenerationDetails()

    def retrieval_part(self) -> RetrievalDetails:
        return self.details if isinstance(self.details, RetrievalDetails) else RetrievalDetails()

    def app_part(self) -> AppDetails:
        return self.details if isinstance(self.details, AppDetails) else AppDetails()

    def position_part(self) -> PositionDetails:
        return self.details if isinstance(self.details, PositionDetails) else PositionDetails()


def headline_k(report: Report) -> int:
    """The cutoff the gate's ranking metrics are read at (`compare.headline_k`), where this run measured it."""
    k = int((report.config.get("compare") or {}).get("headline_k") or 5)
    ks = sorted({cut for n in report.metrics if (cut := MetricName.parse(n).k) is not None})
    return k if k in ks or not ks else max(ks)


def tag_columns(r: Report) -> list[str]:
    """The metrics the by-tag tables show: the headline cutoff's; the tier gives each of them an interval per tag."""
    return [c for c in headline_names("retrieval", headline_k(r)) if "@" in c and c in r.metrics]
