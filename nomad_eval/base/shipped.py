"""A shipped config option read as a file, for a component built outside a composed config (the mock ceiling
beside another model, the default chunker of a pipeline that has none, benchmarks, tests): the YAML stays the one
place its values are written.

Read as plain YAML: of the interpolations the shipped options hold, a built one needs only `${nomad_threads:}`
(conf/model/smollm2.yaml, conf/embedder/minilm.yaml), resolved here as the composed config resolves it; any other
left in a built option is an error naming its file, line and value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.cpus import threads_per_job
from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.base.paths import CONF

# Keys of a group's options that the runtime reads itself rather than pass to the option's `_target_`.
RUNTIME_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"store": ("distractors", "distractor_chunking", "lock_timeout", "single_process")})

# The interpolations a built option may hold, each as written in the YAML, and its value (cli/resolvers.py
# resolves the same ones in a composed config). A component built here is no parallel launcher's job, so it
# takes every core this process may use.
RESOLVED: Mapping[str, Callable[[], Any]] = MappingProxyType({"${nomad_threads:}": lambda: threads_per_job(None)})


def _file(group: str, name: str) -> Path:
    return CONF / group / f"{name}.yaml"


def option(group: str, name: str) -> JsonObject:
    """`conf/<group>/<name>.yaml` as written (interpolations left as written)."""
    path = _file(group, name)
    tree = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(tree, dict):
        raise InvalidInput([Defect(str(path), 1, f"a config option is a mapping of keys to values, not {tree!r}")])
    return {str(k): v for k, v in tree.items()}


def _line(path: Path, key: str) -> int | None:
    """The line of top-level `key` in the YAML file at `path` (None when it has no such key)."""
    root = yaml.compose(path.read_text(encoding="utf-8"))
    if isinstance(root, yaml.MappingNode):
        for key_node, _ in root.value:
            if key_node.value == key:
                return int(key_node.start_mark.line) + 1
    return None


def _resolved(value: Any, path: Path, key: str) -> Any:
    """`value` (of top-level `key` in `path`) with its interpolations resolved from RESOLVED."""
    if isinstance(value, dict):
        return {k: _resolved(v, path, key) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, path, key) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    if value in RESOLVED:
        return RESOLVED[value]()
    known = ", ".join(RESOLVED)
    raise InvalidInput([Defect(str(path), _line(path, key), f"{key}: {value!r} cannot be resolved outside a "
                               f"composed config (only {known} can); pass {key}=... in its place")])


def build(group: str, name: str, /, **values: Any) -> Any:
    """The option's `_target_` called with its settings, `values` (any objects) in place of the option's. Called
    directly rather than through Hydra's instantiate, so the target's own errors reach the caller unwrapped."""
    from hydra.utils import get_object

    written = option(group, name)
    for key in (*RUNTIME_KEYS.get(group, ()), *values):
        written.pop(key, None)  # before resolving: `path: ${paths.data_dir}/...` has no paths here
    path = _file(group, name)
    settings = {key: _resolved(value, path, key) for key, value in written.items()}
    return get_object(str(settings.pop("_target_")))(**settings, **values)
