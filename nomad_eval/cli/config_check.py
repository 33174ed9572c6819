"""The composed config checked and typed at the boundary, so a typo fails with the key and value, not deep in a
tier: the one place a DictConfig becomes the RunConfig every tier reads (nomad_eval/config/)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, TypeAdapter, ValidationError
from rich.markup import escape

from nomad_eval.base.console import err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import CONF
from nomad_eval.cli.suggest import key_paths, load_yaml
from nomad_eval.config import RunConfig, build
from nomad_eval.config.groups import (
    AppKeys,
    BackendKeys,
    EmbedderKeys,
    ModelKeys,
    PipelineKeys,
    StoreKeys,
)
from nomad_eval.config.run_config import PlainKeys
from nomad_eval.config.sections import (
    AuditKeys,
    BrowseKeys,
    CalibrateKeys,
    CompareKeys,
    DatasetKeys,
    GateKeys,
    JudgingKeys,
    LookupKeys,
    PathsKeys,
    PlanKeys,
    PromoteKeys,
    StatsKeys,
    TraceKeys,
)
from nomad_eval.config.tiers import AnyTier

# Each checked section of the composed config: its dotted path ("" for the plain keys) and the keys it must hold.
SECTIONS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("", PlainKeys), ("pipeline", PipelineKeys), ("embedder", EmbedderKeys),
    ("model", ModelKeys), ("judge.model", BackendKeys), ("store", StoreKeys), ("compare", CompareKeys),
    ("promote", PromoteKeys), ("stats", StatsKeys), ("plan", PlanKeys), ("judging", JudgingKeys),
    ("calibrate", CalibrateKeys), ("dataset", DatasetKeys), ("trace", TraceKeys), ("matrix.lookup", LookupKeys),
    ("gate", GateKeys), ("browse", BrowseKeys), ("app", AppKeys), ("audit", AuditKeys),
    ("paths", PathsKeys),
)
# The tier's own keys: one model per kind of tier, chosen by tier.name (nomad_eval/config/tiers.py).
TIER: TypeAdapter[Any] = TypeAdapter(AnyTier)


def config_trees(cfg: DictConfig) -> tuple[Any, Any]:
    """`cfg` as OmegaConf.to_container gives it unresolved, and resolved (the exception instead, when resolving
    fails): the config check and the report both read them."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    try:
        return raw, OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:  # OmegaConf wraps a resolver's own failure in one of its errors
        return raw, exc


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


def unknown_top_level(tree: Mapping[str, object]) -> list[str]:
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


def _section(tree: Mapping[str, object], path: str) -> tuple[Any, bool]:
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
    from nomad_eval.run.retrieval_cases import ks_problems

    return ks_problems(ks, top_k)


def _messages(exc: ValidationError, path: str, skip: int = 0) -> list[str]:
    """A validation error of the section at `path` as `key=value: why` lines; `skip`: leading parts of each
    error's location that name no key (the tier's kind)."""
    prefix = f"{path}." if path else ""
    problems: list[str] = []
    by_key: dict[str, int] = {}  # a value no member of a union takes: one line, each member's reason joined
    for err in exc.errors():
        loc = _key_parts(err["loc"][skip:])
        if err["type"] == "missing":
            # A group's option holds only the keys its target takes (tier.ks is the retrieval tier's, a custom
            # pipeline has no chunk_size); every other section is config.yaml's, whole.
            if path.split(".")[0] not in _GROUPS:
                problems.append(f"{prefix}{'.'.join(str(p) for p in loc)} is missing: config.yaml sets it")
        elif loc:
            key = prefix + ".".join(str(p) for p in loc)
            if key in by_key:
                problems[by_key[key]] += f", or {err['msg'][0].lower()}{err['msg'][1:]}"
            else:
                by_key[key] = len(problems)
                problems.append(f"{key}={err.get('input')!r}: {err['msg']}")
        else:  # a rule across keys, whose message names them
            problems.append(err["msg"].removeprefix("Value error, "))
    return problems


_UNION_TAG = re.compile(r"(literal|constrained|function|json|tagged|union)[-\\[]")


def _key_parts(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The location's keys and list indexes, without the tags pydantic gives a union's members
    (`constrained-int`, `literal['auto']`), which name no key a user could write."""
    return tuple(p for p in loc if isinstance(p, int) or not _UNION_TAG.match(p))


def _validate(path: str, node: Any) -> list[str]:
    try:
        if path == "tier":
            TIER.validate_python(node)
        else:
            dict(SECTIONS)[path].model_validate(node)
    except ValidationError as exc:
        return _messages(exc, path, skip=1 if path == "tier" else 0)
    return []


def section_problems(tree: Mapping[str, object]) -> list[str]:
    """Every checked key of the wrong type or out of range, as `key=value: why`."""
    problems: list[str] = []
    for path in ("", "pipeline", "tier", *(p for p, _ in SECTIONS[2:])):
        node, present = _section(tree, path)
        if present and not isinstance(node, dict):
            problems.append(f"{path}={node!r}: must be a mapping of settings")
            continue
        problems += _validate(path, node if present else {})
    return problems


def typed(cfg: DictConfig, trees: tuple[Any, Any] | None = None, unresolved: dict[str, str] | None = None
          ) -> RunConfig:
    """The run's typed config, from a composed config the check passed (the entry's, after the check; tests').
    `trees`: config_trees(cfg), when the caller has them; `unresolved`: the keys that could not be resolved."""
    from nomad_eval.base.secrets import redact

    raw, tree = trees or config_trees(cfg)  # resolved once: each resolution parses every interpolation again
    unresolved = {} if unresolved is None else unresolved
    if isinstance(tree, Exception):
        # A value that cannot be resolved (an unset environment variable) stays as written; a tier that reads the
        # config's runtime is refused naming it (config/settings.py), one that never reads it (a compare) runs.
        tree = _leniently(cfg, raw, "", unresolved)
    assert isinstance(tree, dict)
    try:
        return build(tree, redact(raw, tree), unresolved, command_line())
    except ValidationError as exc:  # a key no section check covers (mode, judge.rubrics, distractor_sets)
        problems = [m.replace("values.", "") for m in _messages(exc, "")]
        raise NomadError("invalid configuration:\n  " + "\n  ".join(problems), 2) from None


def command_line() -> list[str]:
    """The command-line overrides as typed: unresolved, since reading them through OmegaConf would resolve
    `model.api_key=${oc.env:KEY}` into the key itself; a credential typed literally is redacted."""
    from hydra.core.hydra_config import HydraConfig

    from nomad_eval.base.secrets import redact_override

    if not HydraConfig.initialized():
        return []
    typed = OmegaConf.to_container(HydraConfig.get().overrides.task, resolve=False)
    return [redact_override(str(o)) for o in typed or []]


def _leniently(cfg: DictConfig, raw: Any, path: str, unresolved: dict[str, str]) -> Any:
    """`raw` with each value resolved on its own; one that cannot be is kept as written and noted with why."""
    if isinstance(raw, dict):
        return {k: _leniently(cfg, v, f"{path}.{k}" if path else str(k), unresolved) for k, v in raw.items()}
    if isinstance(raw, list):
        return [_leniently(cfg, v, f"{path}[{i}]", unresolved) for i, v in enumerate(raw)]
    try:
        value = OmegaConf.select(cfg, path, throw_on_resolution_failure=True)
    except OmegaConfBaseException as exc:
        unresolved[path] = f"{type(exc).__name__}: {exc}"
        return raw
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def check_config(cfg: DictConfig) -> RunConfig:
    """The run's typed config, checked: every key of the wrong type or out of range named at once (exit 2)."""
    tree, resolved = config_trees(cfg)
    for note in unknown_top_level(tree):
        err_console.print(f"[yellow]warning:[/] {escape(note)}")
    # Interpolations resolved (`top_k: ${oc.env:TOP_K}` is checked as the number it becomes); where one cannot be
    # resolved here, its text, which the type check then names.
    unresolved: dict[str, str] = {}
    if isinstance(resolved, Exception):
        resolved = _leniently(cfg, tree, "", unresolved)
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
    return typed(cfg, (tree, resolved), unresolved)
