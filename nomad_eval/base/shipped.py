"""A shipped config option read as a file, for a component built outside a composed config (the mock ceiling
beside another model, the default chunker of a pipeline that has none, benchmarks, tests): the YAML stays the one
place its values are written."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from omegaconf import OmegaConf

from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.paths import CONF

# Keys of a group's options that the runtime reads itself rather than pass to the option's `_target_`.
RUNTIME_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"store": ("distractors", "distractor_chunking", "lock_timeout", "single_process")})


def option(group: str, name: str) -> JsonObject:
    """`conf/<group>/<name>.yaml` as written (interpolations left as written)."""
    tree = OmegaConf.to_container(OmegaConf.load(CONF / group / f"{name}.yaml"), resolve=False)
    assert isinstance(tree, dict), f"{group}/{name}.yaml is not a mapping"
    return {str(k): v for k, v in tree.items()}


def build(group: str, name: str, /, **values: Any) -> Any:
    """The option's `_target_` called with its settings, `values` (any objects) in place of the option's. Called
    directly rather than through Hydra's instantiate, so the target's own errors reach the caller unwrapped."""
    from hydra.utils import get_object

    written = option(group, name)
    for key in (*RUNTIME_KEYS.get(group, ()), *values):
        written.pop(key, None)  # before resolving: `path: ${paths.data_dir}/...` has no paths here
    tree = OmegaConf.to_container(OmegaConf.create(written), resolve=True)
    assert isinstance(tree, dict)
    settings = {str(k): v for k, v in tree.items()}
    return get_object(str(settings.pop("_target_")))(**settings, **values)
