"""The user's own code named by a config (`_target_: myretriever.retrieve`): found in the project folder, and a
target that cannot be found refused with what was searched and how to fix it, before anything runs."""

from __future__ import annotations

import importlib
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.errors import NomadError
from nomad_eval.cli.suggest import key_paths


def _locate(target: str) -> str | None:
    """Why `target` (a dotted path to a module's attribute) cannot be found, or None when it can."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: object = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not (name == exc.name or name.startswith(exc.name + ".")):
                return f"module `{name}` was found, but importing it failed: {exc}"
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return f"module `{name}` ({getattr(obj, '__file__', name)}) has no `{attr}`"
            obj = getattr(obj, attr)
        return None
    return None if len(parts) == 1 else f"no module `{parts[0]}`"


def check_targets(cfg: DictConfig, project: Path) -> None:
    """Every `_target_` outside nomad-eval resolves, or the run stops here (exit 2) naming the module, the folder
    searched and the fix. nomad-eval's own targets ship with it and load when used."""
    tree = OmegaConf.to_container(cfg, resolve=False)
    for key, target in key_paths(tree):
        if key.rpartition(".")[2] != "_target_" or not isinstance(target, str):
            continue
        if target.split(".")[0] == "nomad_eval" or "${" in target:
            continue  # shipped, or computed at composition (Hydra resolves and reports it)
        problem = _locate(target)
        if problem is None:
            continue
        top = target.split(".")[0]
        raise NomadError(
            f"{key}: cannot find `{target}`: {problem}; searched the project folder {project} and the installed "
            f"packages. Fix: put {top}.py (or a {top}/ package) in {project}, beside conf/, or install the package "
            f"that provides it, or correct `{key}`", exit_code=2)
