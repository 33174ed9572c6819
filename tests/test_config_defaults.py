"""Every default is written once, in the YAML: the config checker declares types and ranges only, the classes the
config instantiates take every value it gives them, and no code reads a key the composed config always has with a
fallback of its own (a second copy that drifts, as the checker's 0.0 boosts did from the pipeline's 0.1)."""

from __future__ import annotations

import ast
import copy
import inspect
import types
from functools import cache
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_object
from omegaconf import OmegaConf

from nomad_eval.base.paths import CONF, PACKAGE, REPO
from nomad_eval.cli.config_check import SECTIONS, check_config
from nomad_eval.config.tiers import KINDS, Tier
from tests.conftest import MINI

GROUPS = ("tier", "mode", "model", "embedder", "store", "pipeline", "data", "judge", "app")
# An option that cannot compose alone: BEIR reads a folder the user names.
NEEDS = {"data=beir": ["data.path=/x"], "app=answers": ["app.file=/x.jsonl"], "app=http": ["app.url=http://x"]}
# Files another change is rewriting; each still holds a fallback (asserted below, so the entry goes with it).
PENDING: set[str] = set()
# Reads a saved report's config (`report.config`), which a run made before a key existed lacks.
SAVED_CONFIG: set[str] = set()


def _stems(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.yaml")}


def _combinations() -> list[list[str]]:
    """The main config, each option of each group alone, the judge's backend per model, and every experiment:
    the shipped ones and this repository's (its conf/ is on the search path, as a project's is)."""
    combos: list[list[str]] = [[]]
    for group in GROUPS:
        combos += [[f"{group}={o}", *NEEDS.get(f"{group}={o}", [])] for o in sorted(_stems(CONF / group))]
    combos += [[f"model@judge.model={o}"] for o in sorted(_stems(CONF / "model"))]
    experiments = _stems(CONF / "experiment") | _stems(REPO / "conf" / "experiment")
    return combos + [[f"+experiment={e}"] for e in sorted(experiments)]


COMBINATIONS = _combinations()


@cache
def _composed(overrides: tuple[str, ...]) -> dict[str, Any]:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["quiet=true", *overrides])
    tree: dict[str, Any] = OmegaConf.to_container(cfg, resolve=False)  # type: ignore[assignment]
    return tree


def _all_composed() -> list[dict[str, Any]]:
    return [_composed(tuple(c)) for c in COMBINATIONS]


def _paths(node: Any, prefix: str = "") -> dict[str, Any]:
    """Every dotted key path with its value, sections included."""
    out: dict[str, Any] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out[f"{prefix}{k}"] = v
            out |= _paths(v, f"{prefix}{k}.")
    return out


def _always_present() -> set[str]:
    """The dotted keys every composed combination has."""
    keys = [set(_paths(t)) for t in _all_composed()]
    return set.intersection(*keys)


def test_the_combinations_cover_every_option_and_experiment() -> None:
    flat = {o for c in COMBINATIONS for o in c}
    assert {"pipeline=custom_example", "store=server", "+experiment=hard", "+experiment=scifact"} <= flat
    assert len(COMBINATIONS) > 30


@pytest.mark.parametrize("overrides", COMBINATIONS, ids=" ".join)
def test_every_combination_passes_the_checker(tmp_path: Path, overrides: list[str]) -> None:
    # The composed combination (composed once for every test here), with the fixture suite and private paths set
    # as value overrides: what composing them all together gives.
    cfg = OmegaConf.create(copy.deepcopy(_composed(tuple(overrides))))
    (tmp_path / "data").mkdir()
    for item in (*MINI, f"paths.data_dir={tmp_path / 'data'}", f"paths.run_dir={tmp_path / 'run'}"):
        key, _, value = item.partition("=")
        OmegaConf.update(cfg, key, value)
    check_config(cfg)


def _admits_none(annotation: Any) -> bool:
    origin = get_origin(annotation)
    return (origin is Union or origin is types.UnionType) and type(None) in get_args(annotation)


def test_the_checker_holds_no_default_and_null_only_where_a_yaml_has_it() -> None:
    composed = [_paths(t) for t in _all_composed()]
    tiers = [("tier", model) for model in {*KINDS.values(), Tier}]
    for path, model in [*SECTIONS, *tiers]:
        prefix = f"{path}." if path else ""
        for name, field in model.model_fields.items():
            key = prefix + (field.alias or name)
            assert field.is_required(), f"{key}: a default here copies the YAML's ({field.default!r})"
            values = [p[key] for p in composed if key in p]
            assert values, f"{key}: checked, but no shipped config has it"
            if _admits_none(field.annotation):
                assert None in values, f"{key} may be null, but no shipped config's value is"


def _targets() -> dict[str, set[str]]:
    """Each `_target_` the shipped configs instantiate, with every key any of them passes it."""
    found: dict[str, set[str]] = {}
    for tree in _all_composed():
        for path, node in _paths(tree).items():
            if isinstance(node, dict) and "_target_" in node and not path.startswith(("tier", "hydra")):
                found.setdefault(str(node["_target_"]), set()).update(k for k in node if not k.startswith("_"))
    return found


def test_instantiated_classes_take_every_configured_value_without_a_default_of_their_own() -> None:
    targets = _targets()
    assert {"nomad_eval.rag.pipeline.Pipeline", "nomad_eval.backends.edge.EdgeStore",
            "nomad_eval.backends.minilm.MiniLMEmbedder", "nomad_eval.backends.mock.MockModel"} <= set(targets)
    doubled = []
    for target, keys in sorted(targets.items()):
        params = inspect.signature(get_object(target)).parameters
        doubled += [f"{target}({k}=...)" for k in sorted(keys)
                    if k in params and params[k].default is not inspect.Parameter.empty]
    assert not doubled, "the config's defaults repeated in signatures:\n" + "\n".join(doubled)


def _literal(node: ast.expr) -> bool:
    """A fallback written in code: a constant other than None, a container (`or {}` on a section always there)
    or a module constant (`DEFAULT_LIMIT`)."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    return isinstance(node, ast.Dict | ast.List | ast.Tuple) or isinstance(node, ast.Name) and node.id.isupper()


def _fallbacks(tree: ast.AST, names: set[str], nullable: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """`x.get("<name>", <literal>)` and `x.get("<name>") or <literal>` for the given key names; the second is what
    a null means for a key the YAML leaves null (`gate.fail_under or {}`), so not for those."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _literal(node.values[-1]):
            calls = [v for v in node.values[:-1] if isinstance(v, ast.Call) and v.args
                     and not (isinstance(v.args[0], ast.Constant) and v.args[0].value in nullable)]
        elif isinstance(node, ast.Call) and len(node.args) == 2 and _literal(node.args[1]):
            calls = [node]
        else:
            continue
        for call in calls:
            f = call.func
            if (isinstance(f, ast.Attribute) and f.attr == "get" and call.args
                    and isinstance(call.args[0], ast.Constant) and call.args[0].value in names):
                found.append((node.lineno, str(call.args[0].value)))
    return found


def _reads_config(text: str) -> bool:
    return "cfg" in text or "DictConfig" in text


# Key names the composed config always has that also name fields of stored reports, cases and calibrations,
# which older files may lack: only a read from the config itself is a doubled default.
REPORT_FIELDS = {"name", "n", "run", "metrics", "mode", "tier", "suite", "tags", "model", "config", "status", "gate"}


def test_no_code_reads_a_key_the_config_always_has_with_a_fallback() -> None:
    present = _always_present()
    names = {p.rsplit(".", 1)[-1] for p in present} - REPORT_FIELDS
    nullable = frozenset(p.rsplit(".", 1)[-1] for t in _all_composed() for p, v in _paths(t).items() if v is None)
    assert {"seed", "resamples", "lock_timeout", "distractor_chunking", "after_run", "top_k"} <= names
    offenders, pending = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not _reads_config(text):
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        hits = _fallbacks(ast.parse(text), names, nullable)
        if rel in SAVED_CONFIG:
            assert "report.config" in text, rel
            continue
        if rel in PENDING:
            pending |= {rel} if hits else set()
            continue
        offenders += [f"{rel}:{line}: {key}" for line, key in hits]
    assert not offenders, "defaults repeated in code (read the composed value):\n" + "\n".join(offenders)
    assert pending == PENDING, f"no fallback left in {sorted(PENDING - pending)}: drop it from PENDING"


def test_the_fallback_finder_finds_each_form() -> None:
    code = ('a = cfg.stats.get("resamples", 2000)\nb = cfg.get("seed") or 0\nc = (cfg.get("stats") or {})\n'
            'd = cfg.get("seed")\ne = report.get("other", 1)\n')
    assert sorted(_fallbacks(ast.parse(code), {"resamples", "seed", "stats"})) == [
        (1, "resamples"), (2, "seed"), (3, "stats")]
    assert _fallbacks(ast.parse(code), {"resamples", "seed", "stats"}, frozenset({"seed"}))[1:] == [(3, "stats")]
