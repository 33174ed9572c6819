"""The report a run leaves behind: a versioned pydantic schema, read back by compare and merge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nomad_eval.metrics.separation import SeparationRow

SCHEMA_VERSION = 1


class Identity(BaseModel):
    """What must match for two runs' numbers to be comparable."""

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


class Provenance(BaseModel):
    git_commit: str | None
    git_dirty: bool | None
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
    metrics: dict[str, float | None] = Field(default_factory=dict)
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
    position: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)  # things the user should know that are not failures
    provenance: Provenance | None = None
    timings: dict[str, float] = Field(default_factory=dict)
