"""The report a run leaves behind: a versioned pydantic schema, read back by compare and merge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nomad_eval.metrics.separation import SeparationRow

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


# Differing in any of these (or in the fingerprint or tier) means the runs measured different things: exit 2.
TASK_FIELDS = ("goldens_hash", "suite", "tags", "limit", "mode", "measures")


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
    counts: dict[str, int] = Field(default_factory=dict)
    separation: list[SeparationRow] = Field(default_factory=list)
    ablation: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    # Generation: where the points went, the mock ceiling on the same prompts, questions that flip.
    decomposition: dict[str, Any] = Field(default_factory=dict)
    mock_line: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    unstable: list[str] = Field(default_factory=list)
    chars_per_token: float | None = None
    # Judge verdicts stand apart: they never enter `metrics` or the deterministic means.
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # Per judge metric: the judge mean beside its prediction-powered correction from human labels, or why none.
    judge_corrected: dict[str, dict[str, Any]] = Field(default_factory=dict)
    position: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)  # things the user should know that are not failures
    provenance: Provenance | None = None
    timings: dict[str, float] = Field(default_factory=dict)


def headline_k(report: Report) -> int:
    """The cutoff the gate's ranking metrics are read at (`compare.headline_k`), where this run measured it."""
    k = int((report.config.get("compare") or {}).get("headline_k") or 5)
    ks = sorted({int(n.split("@")[1]) for n in report.metrics if "@" in n})
    return k if k in ks or not ks else max(ks)
