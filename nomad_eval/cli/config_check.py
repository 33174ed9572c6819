"""Plain config keys checked at the boundary, so a typo fails with the key and value, not deep in a tier."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator
from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import CONF
from nomad_eval.harness.config_trees import config_trees

# Strict: pydantic's lax mode reads `limit=true` as 1 and `threshold="0.4"` as a number; a config value of the
# wrong type is a typo to name, not to guess at. A Float takes an int (0 is a fine threshold) but never a bool,
# and never NaN (which compares false with every bound, so no range check would catch it) or infinity.
Int = Annotated[int, Strict()]
Float = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Bool = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Field(ge=1)]
Seconds = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


class _Keys(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PlainKeys(_Keys):
    threshold: Annotated[float, Strict(), Field(ge=-1.0, le=1.0, allow_inf_nan=False)] | None = None
    repeats: Count
    seed: Annotated[int, Strict(), Field(ge=0)]  # numpy's generators refuse a negative seed
    limit: Count | None = None
    tags: list[Annotated[str, Strict()]]
    ablate: Bool = False
    verbose: Bool = False
    quiet: Bool = False
    cache: Bool = True
    resume: Bool = False


class PipelineKeys(_Keys):
    top_k: Count = 5
    candidate_multiplier: Count = 4
    min_final_score: Float = 0.0
    chunk_size: Count = 800
    chunk_overlap: Annotated[int, Strict(), Field(ge=0)] = 120
    whole_document: Bool = False
    glossary: Bool = True
    rerank: Bool = True
    term_boost: Float = 0.0
    keyword_boost: Float = 0.0
    heading_boost: Float = 0.0
    same_doc_penalty: Float = 0.0

    @model_validator(mode="after")
    def _overlap_below_size(self) -> PipelineKeys:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"pipeline.chunk_overlap={self.chunk_overlap} must be below "
                             f"pipeline.chunk_size={self.chunk_size}")
        return self


class TierKeys(_Keys):
    ks: list[Int] = Field(default=[1, 3, 5, 10], min_length=1)  # values: ks_rule, with pipeline.top_k
    temperature: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)] = 0.0
    max_tokens: Count = 128
    chunk_share: Annotated[float, Strict(), Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 0.6
    passages: Count = 5  # tier=position: N; its positions are checked against it by the tier
    positions: list[Count] | None = None


class EmbedderKeys(_Keys):
    dim: Count | None = None
    max_input_tokens: Count | None = None
    batch_size: Count | None = None
    timeout: Seconds | None = None


class BackendKeys(_Keys):
    """A chat model's numbers, under `model` and under `judge.model`."""

    num_ctx: Count | None = None
    concurrency: Count | None = None
    threads: Count | None = None
    retries: Annotated[int, Strict(), Field(ge=0)] | None = None
    timeout: Seconds | None = None
    connect_timeout: Seconds | None = None


class StoreKeys(_Keys):
    lock_timeout: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)] | None = None
    timeout: Seconds | None = None


class CompareKeys(_Keys):
    headline_k: Count = 5
    after_run: Bool = False
    strict: Bool = False
    exclude_unstable: Bool = False


class PromoteKeys(_Keys):
    force: Bool = False


class StatsKeys(_Keys):
    cluster: Bool = False
    resamples: Count = 2000


class PlanKeys(_Keys):
    # 1 would make the planned spread of a paired delta zero, and every change detectable.
    correlation: Annotated[float, Strict(), Field(ge=-1.0, lt=1.0, allow_inf_nan=False)] = 0.5


Share = Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class JudgingKeys(_Keys):
    min_agreement: Share = 0.85
    gate_on: Literal["point", "lower_bound"] = "point"
    max_order_flip_rate: Share | None = None
    max_verbosity_shift: Share | None = None
    min_abstention_faithful: Share | None = None
    retries: Annotated[int, Strict(), Field(ge=0)] = 2
    max_tokens: Count = 160


class CalibrateKeys(_Keys):
    repeats: Count = 2
    battery_size: Annotated[int, Strict(), Field(ge=0)] | None = None


class DatasetKeys(_Keys):
    max_candidates: Count = 10


class TraceKeys(_Keys):
    otlp_timeout_s: Seconds = 10


class LookupKeys(_Keys):
    score: Float | None = None
    margin: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)] = 0.1


class GateKeys(_Keys):
    fail_under: dict[str, Float] | None = None


class BrowseKeys(_Keys):
    roots: list[Annotated[str, Strict()]] = Field(default_factory=lambda: ["outputs", "multirun"])
    out: Annotated[str, Strict(), Field(min_length=1)] = "runs.html"
    limit: Count = 500
    after_run: Bool = True


# Each checked section of the composed config: its dotted path ("" for the plain keys) and the keys it must hold.
SECTIONS: tuple[tuple[str, type[_Keys]], ...] = (
    ("", PlainKeys), ("pipeline", PipelineKeys), ("tier", TierKeys), ("embedder", EmbedderKeys),
    ("model", BackendKeys), ("judge.model", BackendKeys), ("store", StoreKeys), ("compare", CompareKeys),
    ("promote", PromoteKeys), ("stats", StatsKeys), ("plan", PlanKeys), ("judging", JudgingKeys),
    ("calibrate", CalibrateKeys), ("dataset", DatasetKeys), ("trace", TraceKeys), ("matrix.lookup", LookupKeys),
    ("gate", GateKeys), ("browse", BrowseKeys),
)


_MODES = ("oracle", "e2e", "noretrieval")


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


_GROUPS = {"tier", "mode", "model", "embedder", "store", "pipeline", "data", "judge", "hydra"}


def _leaf_paths(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every key path in a config container with its value, nodes included."""
    if not isinstance(node, dict):
        return []
    out = []
    for k, v in node.items():
        path = f"{prefix}{k}"
        out.append((path, v))
        out += _leaf_paths(v, path + ".")
    return out


def _known_top_level() -> frozenset[str]:
    return frozenset(str(k) for k in OmegaConf.load(CONF / "config.yaml").keys()) | _GROUPS


def unknown_top_level(tree: dict[str, Any]) -> list[str]:
    """Top-level keys no part of nomad-eval reads (`+top_k=3` where `pipeline.top_k=3` was meant)."""
    known = _known_top_level()
    paths = [p for p, _ in _leaf_paths(tree)]
    notes = []
    for key in sorted(str(k) for k in tree if str(k) not in known):
        near = [p for p in paths if p.endswith("." + key)]
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        notes.append(f"`{key}` is not a nomad-eval setting: nothing reads it{hint}")
    return notes


def _section(tree: dict[str, Any], path: str) -> tuple[Any, bool]:
    """The node at a dotted path and whether it is there (a missing section takes its model's defaults)."""
    node: Any = tree
    for part in path.split(".") if path else []:
        if not isinstance(node, dict) or part not in node:
            return None, False
        node = node[part]
    return node, True


def _resolved(cfg: DictConfig) -> Any:
    """The config with interpolations resolved (`top_k: ${oc.env:TOP_K}` is checked as the number it becomes);
    where one cannot be resolved here, its text, which the type check then names."""
    raw, resolved = config_trees(cfg)
    return raw if isinstance(resolved, Exception) else resolved


def ks_rule(cfg: DictConfig, tree: Any = None) -> list[str]:
    """Across tier.ks and pipeline.top_k (retrieval tier): every cut-off at least 1 and at most top_k, since
    @k above top_k would equal @top_k by construction. Bad types are left to the per-key checks above. `tree`:
    the config as `_resolved` gives it, when the caller has it already."""
    if tree is None:
        tree = _resolved(cfg)
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
                if err["loc"]:
                    key = prefix + ".".join(str(p) for p in err["loc"])
                    problems.append(f"{key}={err.get('input')!r}: {err['msg']}")
                else:  # a rule across keys, whose message names them
                    problems.append(err["msg"].removeprefix("Value error, "))
    return problems


def check_config(cfg: DictConfig) -> None:
    tree, _ = config_trees(cfg)
    for note in unknown_top_level(tree):
        err_console.print(f"[yellow]warning:[/] {escape(note)}")
    resolved = _resolved(cfg)
    problems = section_problems(resolved)
    fail_under, _ = _section(tree, "gate.fail_under")
    for name in fail_under if isinstance(fail_under, dict) else {}:  # a wrong type is named above
        if not str(name).startswith("judge."):  # judge gates are checked against their calibration report
            problem = gate_name_problem(str(name))
            if problem:
                problems.append(problem)
    problems += ks_rule(cfg, resolved)
    missing = sorted(k for k, v in _leaf_paths(tree) if v == "???")
    problems += [f"{k} must be set (it has no default: {k}=...)" for k in missing]
    if problems:
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2)
