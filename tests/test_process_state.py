"""A job is a plain function of its config and its files: besides the loaded models (and the caches on disk), no
module of nomad_eval holds state that one run could leave for the next.

Every module-level dict, list, set or memoised function, every such class attribute and every module-level object
of ours holding one must be named below with its reason; anything new fails here until it is made immutable or
justified.
"""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

import nomad_eval
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI

# Process-level by design: loading a model is what a user waits for.
MODELS = {
    "nomad_eval.backends.minilm._LOADED": "the loaded MiniLM models, by weights folder and input limit",
    "nomad_eval.backends.llamacpp._HASHED": "the GGUF files' hashes, by path, size and time: loaded-model facts",
}

# Filled when the module is imported and never changed after (test_a_run_changes_no_table holds them still).
TABLES = {
    "nomad_eval.metrics.registry.REGISTRY": "every metric, registered by its module at import",
    "nomad_eval.metrics.registry.UPSTREAM": "the upstream view's metrics, registered by metrics/upstream at import",
    "nomad_eval.backends.mock._UNESCAPE": "constant: entity -> character",
    "nomad_eval.rag.prompt._UNESCAPE": "constant: entity -> character",
    "nomad_eval.base.sqlite_store._CORRUPT": "constant: sqlite's result codes for a damaged file",
    "nomad_eval.report.merge.UNMEASURED": "constant: keys that never change what is measured",
    "nomad_eval.cli.init.RENAMES": "constant: scaffold files renamed when written",
    "nomad_eval._LAZY": "constant: the public API's names -> their modules, imported on first use",
    "nomad_eval.core._WHERE": "constant: lazily imported names -> their modules",
    "nomad_eval.core.causes.LABELS": "constant: failure causes -> their labels",
    "nomad_eval.core.stats._SIDES": "constant: test sides -> scipy's names",
    "nomad_eval.data.distractors.GENERATED": "constant: the generated distractor sets",
    "nomad_eval.harness.system.TIER_KEYS": "constant: the settings each tier depends on",
    "nomad_eval.metrics.answer.measures.FEATURES": "constant: markdown features -> patterns",
    "nomad_eval.report.html_charts.COLORS": "constant: chart colours",
    "nomad_eval.report.markdown.ATTACK_HEADER": "constant: a table's header",
    "nomad_eval.report.upstream.UPSTREAM_TO_OURS": "constant: upstream metric names -> ours",
    "nomad_eval.gate.announce.OUTCOME_STYLE": "constant: outcome -> console style",
    "nomad_eval.gate.announce.QUESTION_NOTES": "constant: question change -> its note",
    "nomad_eval.gate.announce.NEXT_STEP": "constant: outcome -> the next step to suggest",
    "nomad_eval.run.retrieval_cases._LEVELS": "constant: metric level -> what it ranks",
    "nomad_eval.config.tiers.KINDS": "constant: tier name -> its typed section",
    "nomad_eval.records.cases.MODELS": "constant: case kind -> its record model",
    "nomad_eval.records.codec.ORDER": "constant: case kind -> the order its fields are written in",
    "nomad_eval.report.legacy._MOVED": "constant: a version-1 report's flat fields -> where version 2 keeps them",
    "nomad_eval.report.legacy._FLAT": "constant: the version-1 flat fields",
    "nomad_eval.report.legacy._EMPTY_IS_NONE": "constant: version-1 fields whose empty value meant not measured",
}

_MUTABLE = (dict, list, set, bytearray, deque)


def _modules() -> Iterator[Any]:
    yield nomad_eval
    for info in pkgutil.walk_packages(nomad_eval.__path__, "nomad_eval."):
        yield importlib.import_module(info.name)


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _holds_state(value: Any) -> bool:
    if isinstance(value, _MUTABLE) or hasattr(value, "cache_info"):  # cache_info: functools' lru_cache / cache
        return True
    # An object of ours (not a class, function or module) carrying a mutable container, as a cache object would.
    if type(value).__module__.startswith("nomad_eval") and not isinstance(value, type) and not callable(value):
        return any(isinstance(v, _MUTABLE) for v in getattr(value, "__dict__", {}).values())
    return False


def _found() -> dict[str, Any]:
    """Every module-level (or class-level) value holding state, by the name it is defined under. A value imported
    from another module is named where it is defined (the first module seen holding it)."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    for module in _modules():
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr, member in vars(value).items():
                    # model_config: pydantic's settings of a model class, read-only by convention.
                    if not attr.startswith("__") and attr != "model_config" and _holds_state(member):
                        found[f"{module.__name__}.{name}.{attr}"] = member
            elif _holds_state(value) and id(value) not in seen:
                defined = getattr(value, "__module__", None) if callable(value) else None
                if defined is None or defined == module.__name__:
                    found[f"{module.__name__}.{name}"] = value
            seen.add(id(value))
    return found


def test_no_module_holds_state_beyond_the_loaded_models() -> None:
    allowed = {id(_resolve(name)) for name in {**MODELS, **TABLES}}
    extra = sorted(name for name, value in _found().items() if id(value) not in allowed)
    assert not extra, f"module-level state a run could leave for the next (see this file's docstring): {extra}"


def test_every_allowed_name_still_exists_and_holds_state() -> None:
    for name in {**MODELS, **TABLES}:
        assert _holds_state(_resolve(name)), name  # a stale entry would allow whatever takes its name later


def test_the_check_sees_a_memo_and_a_cache_object() -> None:
    import functools

    class Memo:
        def __init__(self) -> None:
            self.kept: dict[str, int] = {}

    Memo.__module__ = "nomad_eval.example"
    assert _holds_state({}) and _holds_state([]) and _holds_state(functools.lru_cache(maxsize=1)(len))
    assert _holds_state(Memo()) and not _holds_state(frozenset()) and not _holds_state((1, 2))


def _run(make_cfg: Callable[..., DictConfig], out: Path, threshold: float) -> dict[str, Any]:
    assert run_tier(make_cfg(*MINI, f"threshold={threshold}", f"paths.run_dir={out}")) == 0
    report = json.loads((out / "report.json").read_text())
    files = {name: (out / name).read_bytes() for name in ("cases.jsonl", "run.trec", "qrels.trec", "scores.json")}
    return {**files, **{k: report[k] for k in ("identity", "metrics", "intervals", "metrics_by_tag", "details",
                                               "counts", "warnings")}}


def test_a_run_changes_no_table_and_a_run_before_it_changes_no_result(make_cfg: Callable[..., DictConfig],
                                                                      tmp_path: Path) -> None:
    _run(make_cfg, tmp_path / "warm-up", 0.3)  # the embedding cache and the store filled
    tables = {name: copy.deepcopy(_resolve(name)) for name in TABLES}
    first = _run(make_cfg, tmp_path / "first", 0.3)
    _run(make_cfg, tmp_path / "between", 0.2)
    again = _run(make_cfg, tmp_path / "again", 0.3)
    assert again == first
    for name, before in tables.items():
        assert _resolve(name) == before, name
