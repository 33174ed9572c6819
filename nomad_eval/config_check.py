"""Plain config keys checked at the boundary, so a typo fails with the key and value, not deep in a tier."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nomad_eval.errors import NomadError


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
    return None


def check_config(cfg: DictConfig) -> None:
    problems: list[str] = []
    for name in (cfg.get("gate") or {}).get("fail_under") or {}:
        if not str(name).startswith("judge."):  # judge gates are checked against their calibration report
            problem = gate_name_problem(str(name))
            if problem:
                problems.append(problem)
    for model, node, prefix in ((PlainKeys, cfg, ""), (PipelineKeys, cfg.get("pipeline"), "pipeline.")):
        data: Any = OmegaConf.to_container(node, resolve=False) if node is not None else {}
        try:
            model.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                key = prefix + ".".join(str(p) for p in err["loc"])
                problems.append(f"{key}={err.get('input')!r}: {err['msg']}")
    if problems:
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2)
