"""Plain config keys checked at the boundary, so a typo fails with the key and value, not deep in a tier."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import REPO


class PlainKeys(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    repeats: int = Field(ge=1)
    seed: int
    limit: int | None = Field(default=None, ge=1)
    tags: list[str]


class PipelineKeys(BaseModel):
    model_config = ConfigDict(extra="ignore")
    top_k: int = Field(default=5, ge=1)
    candidate_multiplier: int = Field(default=4, ge=1)
    min_final_score: float = 0.0
    chunk_size: int = Field(default=800, ge=1)
    chunk_overlap: int = Field(default=120, ge=0)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> PipelineKeys:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"pipeline.chunk_overlap={self.chunk_overlap} must be below "
                             f"pipeline.chunk_size={self.chunk_size}")
        return self


class TierKeys(BaseModel):
    model_config = ConfigDict(extra="ignore")
    ks: list[int] = Field(default=[1, 3, 5, 10], min_length=1)
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=128, ge=1)
    chunk_share: float = Field(default=0.6, gt=0.0, le=1.0)


_MODES = ("oracle", "e2e", "noretrieval")


def gate_name_problem(name: str) -> str | None:
    """Why a metric named in gate.fail_under can never be found in a report, or None when it can."""
    from nomad_eval.metrics import REGISTRY  # imports every metric module, so the registry is complete

    family, _, k = name.partition("@")
    mode, dot, bare = family.rpartition(".")
    spec = REGISTRY.get(bare)
    known = ", ".join(sorted(s.family + ("@k" if s.parametrized else "") for s in REGISTRY.values()))
    if spec is None:
        return f"gate.fail_under names {name!r}: no such metric (known: {known})"
    if dot and mode not in _MODES:
        return f"gate.fail_under names {name!r}: {mode!r} is not a mode ({', '.join(_MODES)})"
    if spec.parametrized and not k.isdigit():
        return f"gate.fail_under names {name!r}: {bare} needs a cut-off, e.g. {bare}@5"
    if not spec.parametrized and k:
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


def unknown_top_level(tree: dict[str, Any]) -> list[str]:
    """Top-level keys no part of nomad-eval reads (`+top_k=3` where `pipeline.top_k=3` was meant)."""
    known = set(OmegaConf.load(REPO / "conf" / "config.yaml").keys()) | _GROUPS
    paths = [p for p, _ in _leaf_paths(tree)]
    notes = []
    for key in sorted(str(k) for k in tree if str(k) not in known):
        near = [p for p in paths if p.endswith("." + key)]
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        notes.append(f"`{key}` is not a nomad-eval setting: nothing reads it{hint}")
    return notes


def ks_rule(cfg: DictConfig) -> list[str]:
    """Across tier.ks and pipeline.top_k (retrieval tier): every cut-off at least 1 and at most top_k, since
    @k above top_k would equal @top_k by construction. Bad types are left to the per-key checks above."""
    tier, pipe = cfg.get("tier"), cfg.get("pipeline")
    if tier is None or tier.get("name") != "retrieval" or not isinstance(tier.get("ks"), ListConfig):
        return []
    top_k = pipe.get("top_k") if pipe is not None else None
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        top_k = None
    ks = list(tier.ks)
    if any(isinstance(k, bool) or not isinstance(k, int) for k in ks):
        return []
    from nomad_eval.tiers.retrieval_cases import ks_problems

    return ks_problems(ks, top_k)


def check_config(cfg: DictConfig) -> None:
    tree: Any = OmegaConf.to_container(cfg, resolve=False)
    for note in unknown_top_level(tree):
        err_console.print(f"[yellow]warning:[/] {escape(note)}")
    problems: list[str] = []
    for name in (cfg.get("gate") or {}).get("fail_under") or {}:
        if not str(name).startswith("judge."):  # judge gates are checked against their calibration report
            problem = gate_name_problem(str(name))
            if problem:
                problems.append(problem)
    for model, node, prefix in ((PlainKeys, cfg, ""), (PipelineKeys, cfg.get("pipeline"), "pipeline."),
                                (TierKeys, cfg.get("tier"), "tier.")):
        data: Any = OmegaConf.to_container(node, resolve=False) if node is not None else {}
        try:
            model.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                key = prefix + ".".join(str(p) for p in err["loc"])
                if err["loc"]:
                    problems.append(f"{key}={err.get('input')!r}: {err['msg']}")
                else:  # a rule across keys, whose message names them
                    problems.append(err["msg"].removeprefix("Value error, "))
    problems += ks_rule(cfg)
    missing = sorted(k for k, v in _leaf_paths(tree) if v == "???")
    problems += [f"{k} must be set (it has no default: {k}=...)" for k in missing]
    if problems:
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2)
