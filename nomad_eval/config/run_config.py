"""RunConfig: the whole composed config of one run, typed. Built once at the entry (cli/) from Hydra's composed and
resolved config; frozen, so every reader sees what the run was started with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, JsonValue

from nomad_eval.config.groups import Data, Judge, Mode, Model, Option, Pipeline, Store
from nomad_eval.config.sections import (
    AuditKeys,
    BrowseKeys,
    CalibrateKeys,
    CompareKeys,
    DatasetKeys,
    GateKeys,
    JudgingKeys,
    MatrixKeys,
    PathsKeys,
    PlanKeys,
    PromoteKeys,
    StatsKeys,
    TraceKeys,
)
from nomad_eval.config.tiers import AnyTier, RetrievalTier, Tier
from nomad_eval.config.types import Bool, Count, Keys, Text

T = TypeVar("T", bound=Tier)


class PlainKeys(Keys):
    """The top-level keys, plain so that `threshold=0.4,0.5 -m` sweeps them."""

    suite: Text
    threshold: Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False, strict=True)] | None
    repeats: Count | Literal["auto"] | None
    sample_repeats: Count
    repeats_max: Annotated[int, Field(ge=2, strict=True)]
    repeats_agree: Count
    repeats_first: Count
    repeats_budget: Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
    seed: Annotated[int, Field(ge=0, strict=True)]  # numpy's generators refuse a negative seed
    limit: Count | None
    tags: list[Annotated[str, Field(strict=True)]]
    action: Text | None
    ablate: Bool
    verbose: Bool
    quiet: Bool
    cache: Bool | None
    resume: Bool


class RunConfig(PlainKeys):
    tier: AnyTier
    mode: Mode
    model: Model
    embedder: Model
    store: Store
    pipeline: Pipeline
    data: Data
    judge: Judge
    app: Option | None
    compare: CompareKeys
    stats: StatsKeys
    plan: PlanKeys
    promote: PromoteKeys
    matrix: MatrixKeys
    gate: GateKeys
    judging: JudgingKeys
    calibrate: CalibrateKeys
    dataset: DatasetKeys
    distractor_sets: dict[str, Text]
    audit: AuditKeys
    trace: TraceKeys
    browse: BrowseKeys
    paths: PathsKeys
    # The config as reports record it: resolved, with secrets redacted (reports and baselines are shared).
    recorded: dict[str, JsonValue]
    # Keys whose value could not be resolved (an unset environment variable), with why: kept as written.
    unresolved: dict[str, str]
    # The command-line overrides as typed, credentials redacted (cli/ reads them from Hydra's record).
    overrides: list[str] = Field(default_factory=list)

    def tier_of(self, kind: type[T]) -> T:
        """The tier's own section as the kind of tier that reads it (a tier reads only its own)."""
        if not isinstance(self.tier, kind):
            raise TypeError(f"tier={self.tier.name} has no {kind.__name__} section")
        return self.tier

    @property
    def ks(self) -> list[int]:
        """The retrieval tier's cut-offs; none for any other tier."""
        return list(self.tier.ks) if isinstance(self.tier, RetrievalTier) else []


class NamedBaseline(Keys):
    baseline: Text | None


class RunPart(Keys):
    """What a run's corpus, store and suite are read with: enough of a saved report's config to read them again
    (tier=labels shows the passages a judged run injected), whatever keys later versions added."""

    suite: Text
    tags: list[Annotated[str, Field(strict=True)]]
    limit: Count | None
    quiet: Bool
    pipeline: Pipeline
    embedder: Model
    store: Store
    data: Data
    distractor_sets: dict[str, Text]
    paths: PathsKeys
    compare: NamedBaseline


_OPTIONS = ("model", "embedder", "store", "pipeline", "data", "app")


def build(tree: Mapping[str, Any], recorded: Mapping[str, Any], unresolved: Mapping[str, str] | None = None,
          overrides: Sequence[str] = ()) -> RunConfig:
    """The typed config from the resolved tree (pydantic's ValidationError names each bad key)."""
    return RunConfig.model_validate({**_wrapped(tree), "recorded": recorded, "unresolved": dict(unresolved or {}),
                                     "overrides": list(overrides)})


def saved_part(saved: Mapping[str, Any]) -> RunPart:
    """The run part of a saved report's config (resolved and redacted, as reports record it)."""
    return RunPart.model_validate(_wrapped(saved))


def _wrapped(tree: Mapping[str, object]) -> dict[str, object]:
    # `app: null` in config.yaml's defaults list: no app group at all unless tier=app names one.
    node = {"app": None, **{str(k): v for k, v in tree.items()}}
    for key in _OPTIONS:
        if isinstance(node.get(key), Mapping):
            node[key] = {"values": node[key]}
    judge = node.get("judge")
    if isinstance(judge, Mapping) and isinstance(judge.get("model"), Mapping):
        node["judge"] = {**judge, "model": {"values": judge["model"]}}
    return node
