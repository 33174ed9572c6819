"""Plain config keys checked at the boundary, so a typo fails with the key and value, not deep in a tier."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from omegaconf import DictConfig
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator
from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import CONF
from nomad_eval.cli.suggest import key_paths, load_yaml
from nomad_eval.tiers.settings import config_trees

# Strict: pydantic's lax mode reads `limit=true` as 1 and `threshold="0.4"` as a number; a config value of the
# wrong type is a typo to name, not to guess at. A Float takes an int (0 is a fine threshold) but never a bool,
# and never NaN (which compares false with every bound, so no range check would catch it) or infinity.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Bool = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Field(ge=1)]
Seconds = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class _Keys(BaseModel):
    """Types and ranges only: every value, and every default, is the YAML's. A field is required (the composed
    config has the key) and takes None only where a shipped config's value is null."""

    model_config = ConfigDict(extra="ignore")


class PlainKeys(_Keys):
    threshold: Annotated[float, Strict(), Field(ge=-1.0, le=1.0, allow_inf_nan=False)] | None
    repeats: Count | Literal["auto"] | None
    sample_repeats: Count
    repeats_max: Annotated[int, Strict(), Field(ge=2)]
    repeats_agree: Count
    repeats_budget: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)] | None
    seed: Annotated[int, Strict(), Field(ge=0)]  # numpy's generators refuse a negative seed
    limit: Count | None
    tags: list[Annotated[str, Strict()]]
    ablate: Bool
    verbose: Bool
    quiet: Bool
    cache: Bool | None
    resume: Bool


class PipelineKeys(_Keys):
    top_k: Count
    candidate_multiplier: Count
    min_final_score: Float
    chunk_size: Count
    chunk_overlap: Annotated[int, Strict(), Field(ge=0)]
    whole_document: Bool
    glossary: Bool
    rerank: Bool
    term_boost: Float
    keyword_boost: Float
    heading_boost: Float
    same_doc_penalty: Float
    history: Literal["query", "last_user", "rewrite"]  # rag/rewrite.py RULES
    history_turns: Count

    @model_validator(mode="after")
    def _overlap_below_size(self) -> PipelineKeys:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"pipeline.chunk_overlap={self.chunk_overlap} must be below "
                             f"pipeline.chunk_size={self.chunk_size}")
        return self


class TierKeys(_Keys):
    ks: Annotated[list[Int], Field(min_length=1)]  # values: ks_rule, with pipeline.top_k
    temperature: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)]
    max_tokens: Count
    chunk_share: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)]
    passages: Count  # tier=position: N; its positions are checked against it by the tier
    positions: list[Count] | None
    questions: Annotated[int, Strict(), Field(ge=0)]  # tier=synthesize: drafts of each kind
    follow_ups: Annotated[int, Strict(), Field(ge=0)]
    refusals: Annotated[int, Strict(), Field(ge=0)]
    max_doc_share: Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]
    max_overlap: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)]
    fail_unsourced: Bool  # tier=corpus action=lint
    accept: Bool  # tier=corpus action=review


class EmbedderKeys(_Keys):
    dim: Count
    max_input_tokens: Count
    batch_size: Count
    timeout: Seconds
    retries: Count  # tries per batch (embedder=ollama)
    max_response_bytes: Count


class BackendKeys(_Keys):
    """A chat model's numbers, under `model` and under `judge.model`."""

    num_ctx: Count
    concurrency: Count
    threads: Count
    retries: Annotated[int, Strict(), Field(ge=0)]
    timeout: Seconds
    connect_timeout: Seconds
    max_response_bytes: Count


class ModelKeys(BackendKeys):
    """The model under test: model=smollm2's num_ctx is null, the context its GGUF file records."""

    num_ctx: Count | None  # type: ignore[assignment]


class AppKeys(_Keys):
    """tier=app's HTTP client (app=http); app=answers has none of these."""

    timeout: Seconds
    connect_timeout: Seconds
    deadline: Seconds
    retries: Count  # tries per request
    concurrency: Count
    max_response_bytes: Count
    method: Literal["GET", "POST", "PUT", "get", "post", "put"]


class StoreKeys(_Keys):
    lock_timeout: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
    single_process: Bool | None
    timeout: Seconds


class CompareKeys(_Keys):
    headline_k: Count
    after_run: Bool
    strict: Bool
    exclude_unstable: Bool
    tolerance: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)] | None
    view: Literal["auto", "upstream"]


class PromoteKeys(_Keys):
    force: Bool


class StatsKeys(_Keys):
    cluster: Bool
    resamples: Count


class PlanKeys(_Keys):
    # 1 would make the planned spread of a paired delta zero, and every change detectable.
    correlation: Annotated[float, Strict(), Field(ge=-1.0, lt=1.0, allow_inf_nan=False)]


Share = Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class JudgingKeys(_Keys):
    min_agreement: Share
    gate_on: Literal["point", "lower_bound"]
    max_order_flip_rate: Share | None
    max_verbosity_shift: Share | None
    min_abstention_faithful: Share | None
    retries: Annotated[int, Strict(), Field(ge=0)]
    max_tokens: Count


class CalibrateKeys(_Keys):
    repeats: Count
    battery_size: Annotated[int, Strict(), Field(ge=0)] | None


class DataKeys(_Keys):
    follow_links: Bool


class DatasetKeys(_Keys):
    max_candidates: Count


class TraceKeys(_Keys):
    otlp_timeout_s: Seconds


class LookupKeys(_Keys):
    score: Float | None
    margin: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)]


class GateKeys(_Keys):
    fail_under: dict[str, Float] | None


class AuditKeys(_Keys):
    doc_id_key: Annotated[str, Strict(), Field(min_length=1)]
    text_key: Annotated[str, Strict(), Field(min_length=1)]
    sample: Annotated[int, Strict(), Field(ge=0)]
    min_cosine: Annotated[float, Strict(), Field(ge=-1.0, le=1.0, allow_inf_nan=False)]
    max_ghost: Annotated[int, Strict(), Field(ge=0)]
    max_orphan: Annotated[int, Strict(), Field(ge=0)]
    max_missing: Annotated[int, Strict(), Field(ge=0)]
    max_partial: Annotated[int, Strict(), Field(ge=0)]
    max_duplicated: Annotated[int, Strict(), Field(ge=0)]
    max_drift: Annotated[int, Strict(), Field(ge=0)]


class BrowseKeys(_Keys):
    roots: list[Annotated[str, Strict()]]
    out: Annotated[str, Strict(), Field(min_length=1)]
    limit: Count
    after_run: Bool


# Each checked section of the composed config: its dotted path ("" for the plain keys) and the keys it must hold.
SECTIONS: tuple[tuple[str, type[_Keys]], ...] = (
    ("", PlainKeys), ("pipeline", PipelineKeys), ("tier", TierKeys), ("embedder", EmbedderKeys),
    ("model", ModelKeys), ("judge.model", BackendKeys), ("store", StoreKeys), ("compare", CompareKeys),
    ("promote", PromoteKeys), ("stats", StatsKeys), ("plan", PlanKeys), ("judging", JudgingKeys),
    ("calibrate", CalibrateKeys), ("dataset", DatasetKeys), ("trace", TraceKeys), ("matrix.lookup", LookupKeys),
    ("gate", GateKeys), ("browse", BrowseKeys), ("app", AppKeys), ("audit", AuditKeys),
)


_MODES = ("oracle", "e2e", "noretrieval", "app")  # app: what an app run measures of the app itself


def gate_name_problem(name: str) -> str | None:
    """Why a metric named in gate.fail_under can never be found in a report, or None when it can."""
    from nomad_eval.metrics import REGISTRY  # imports every metric module, so the registry is complete
    from nomad_eval.metrics.registry import MetricName

    try:
        parsed = MetricName.parse(name)
    except ValueError as e:
        return f"gate.fail_under: {e}"
    bare = parsed.family
    spec = REGISTRY.get(bare)
    known = ", ".join(sorted(s.family + ("@k" if s.parametrized else "") for s in REGISTRY.values()))
    if spec is None:
        import difflib

        close = difflib.get_close_matches(bare, list(REGISTRY), n=1)
        hint = f"did you mean {str(MetricName(parsed.mode, close[0], parsed.k))!r}? " if close else ""
        return f"gate.fail_under names {name!r}: no such metric; {hint}(known: {known})"
    if parsed.mode is not None and parsed.mode not in _MODES:
        return f"gate.fail_under names {name!r}: {parsed.mode!r} is not a mode ({', '.join(_MODES)})"
    if spec.parametrized and parsed.k is None:
        return f"gate.fail_under names {name!r}: {bare} needs a cut-off, e.g. {bare}@5"
    if not spec.parametrized and parsed.k is not None:
        return f"gate.fail_under names {name!r}: {bare} takes no @k"
    if not spec.gated:
        return f"gate.fail_under names {name!r}: {bare} is descriptive ({spec.definition}), not a quality to gate"
    return None


_GROUPS = frozenset({"tier", "mode", "model", "embedder", "store", "pipeline", "data", "judge", "app", "hydra"})


def unknown_top_level(tree: dict[str, Any]) -> list[str]:
    """Top-level keys no part of nomad-eval reads (`+top_k=3` where `pipeline.top_k=3` was meant)."""
    # Only the keys are needed: libyaml reads them without building OmegaConf nodes (a wait on every start-up).
    known = frozenset(str(k) for k in load_yaml(CONF / "config.yaml")) | _GROUPS
    paths = [p for p, _ in key_paths(tree)]
    notes = []
    for key in sorted(str(k) for k in tree if str(k) not in known):
        near = [p for p in paths if p.endswith("." + key)]
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        notes.append(f"`{key}` is not a nomad-eval setting: nothing reads it{hint}")
    return notes


def _section(tree: dict[str, Any], path: str) -> tuple[Any, bool]:
    """The node at a dotted path and whether it is there."""
    node: Any = tree
    for part in path.split(".") if path else []:
        if not isinstance(node, dict) or part not in node:
            return None, False
        node = node[part]
    return node, True


def ks_rule(cfg: DictConfig, tree: Any = None) -> list[str]:
    """Across tier.ks and pipeline.top_k (retrieval tier): every cut-off at least 1 and at most top_k, since
    @k above top_k would equal @top_k by construction. Bad types are left to the per-key checks above. `tree`:
    the config as `check_config` resolves it, when the caller has it already."""
    if tree is None:
        raw, resolved = config_trees(cfg)
        tree = raw if isinstance(resolved, Exception) else resolved
    (tier, _), (pipe, _) = _section(tree, "tier"), _section(tree, "pipeline")
    if not isinstance(tier, dict) or tier.get("name") != "retrieval" or not isinstance(tier.get("ks"), list):
        return []
    top_k = pipe.get("top_k") if isinstance(pipe, dict) else None
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        top_k = None
    ks = tier["ks"]
    if any(isinstance(k, bool) or not isinstance(k, int) for k in ks):
        return []
    from nomad_eval.tiers.retrieval_cases import ks_problems

    return ks_problems(ks, top_k)


def section_problems(tree: dict[str, Any]) -> list[str]:
    """Every checked key of the wrong type or out of range, as `key=value: why`."""
    problems: list[str] = []
    for path, model in SECTIONS:
        node, present = _section(tree, path)
        if present and not isinstance(node, dict):
            problems.append(f"{path}={node!r}: must be a mapping of settings")
            continue
        prefix = f"{path}." if path else ""
        try:
            model.model_validate(node if present else {})
        except ValidationError as exc:
            for err in exc.errors():
                if err["type"] == "missing":
                    # A group's option holds only the keys its target takes (tier.ks is the retrieval tier's,
                    # a custom pipeline has no chunk_size); every other section is config.yaml's, whole.
                    if path.split(".")[0] not in _GROUPS:
                        problems.append(f"{prefix}{'.'.join(str(p) for p in err['loc'])} is missing: "
                                        "config.yaml sets it")
                elif err["loc"]:
                    key = prefix + ".".join(str(p) for p in err["loc"])
                    problems.append(f"{key}={err.get('input')!r}: {err['msg']}")
                else:  # a rule across keys, whose message names them
                    problems.append(err["msg"].removeprefix("Value error, "))
    return problems


def check_config(cfg: DictConfig) -> None:
    tree, resolved = config_trees(cfg)
    for note in unknown_top_level(tree):
        err_console.print(f"[yellow]warning:[/] {escape(note)}")
    # Interpolations resolved (`top_k: ${oc.env:TOP_K}` is checked as the number it becomes); where one cannot be
    # resolved here, its text, which the type check then names.
    resolved = tree if isinstance(resolved, Exception) else resolved
    problems = section_problems(resolved)
    fail_under, _ = _section(tree, "gate.fail_under")
    for name in fail_under if isinstance(fail_under, dict) else {}:  # a wrong type is named above
        if not str(name).startswith("judge."):  # judge gates are checked against their calibration report
            problem = gate_name_problem(str(name))
            if problem:
                problems.append(problem)
    problems += ks_rule(cfg, resolved)
    missing = sorted(k for k, v in key_paths(tree) if v == "???")
    problems += [f"{k} must be set (it has no default: {k}=...)" for k in missing]
    if problems:
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2)
