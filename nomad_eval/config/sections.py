"""The sections config.yaml holds whole: each a closed set of keys, every one required (config.yaml sets it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from nomad_eval.config.types import Bool, Count, Float, Int, Keys, Name, NonNegative, Seconds, Share, Text, Whole


class CompareKeys(Keys):
    run: Text | None
    baseline: Text | None
    runs: list[Text]
    out: Text | None
    after_run: Bool
    junit: Text | None
    variant: Text | None
    metrics: list[Text] | None
    headline_k: Count
    strict: Bool
    tolerance: NonNegative | None
    view: Literal["auto", "upstream"]
    replay_max: Int
    stale: Text  # fail | warn, checked when a compare is made
    exclude_unstable: Bool
    history: Bool
    history_runs: Count
    reference: Text | None
    correction: Text  # holm | bh, checked by the sweep's ranking


class StatsKeys(Keys):
    cluster: Bool
    resamples: Count


class PlanKeys(Keys):
    baseline: Text | None
    tier: Text
    # 1 would make the planned spread of a paired delta zero, and every change detectable.
    correlation: Annotated[float, Field(ge=-1.0, lt=1.0, allow_inf_nan=False, strict=True)]
    drop: Float | None


class PromoteKeys(Keys):
    run: Text | None
    tier: Text
    variant: Text | None
    force: Bool


class LookupKeys(Keys):
    score: Float | None
    model: Text | None
    column: Text
    margin: NonNegative


class MatrixKeys(Keys):
    lookup: LookupKeys


class GateKeys(Keys):
    fail_under: dict[str, Float] | None
    max_infra: Float


class JudgingKeys(Keys):
    rubrics_dir: Text
    calibration_dir: Text
    min_agreement: Share
    gate_on: Literal["point", "lower_bound"]
    max_order_flip_rate: Share | None
    max_verbosity_shift: Share | None
    min_abstention_faithful: Share | None
    retries: Whole
    max_tokens: Count
    labels: Text | None


class CalibrateKeys(Keys):
    labels: Text | None
    repeats: Count
    battery_size: Whole | None
    generator: Text | None
    file: Text | None


class DatasetKeys(Keys):
    from_traces: Text | None
    annotate: Text | None
    out: Text | None
    max_candidates: Count


class AuditKeys(Keys):
    doc_id_key: Name
    text_key: Name
    sample: Whole
    min_cosine: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False, strict=True)]
    max_ghost: Whole
    max_orphan: Whole
    max_missing: Whole
    max_partial: Whole
    max_duplicated: Whole
    max_drift: Whole


class TraceKeys(Keys):
    otlp_endpoint: Text | None
    otlp_timeout_s: Seconds


class BrowseKeys(Keys):
    roots: list[Annotated[str, Field(strict=True)]]
    out: Name
    limit: Count
    after_run: Bool


class PathsKeys(Keys):
    data_dir: Text
    run_dir: Text | None
    baselines_dir: Text
