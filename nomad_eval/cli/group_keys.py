"""A key set below a config group checked against the option the command line composes, before Hydra's raw
"Key 'ks' is not in struct": `tier.ks=[1,2]` is a key of tier=retrieval, not of tier=generation.

cli/suggest.py answers keys that no config file has; this answers keys that some option of the group has, but not
the selected one. The selection is read the way Hydra composes it, from the files alone: the primary config's
defaults, then each `+experiment=` file's `override /<group>:` lines, then `<group>=<option>` on the command line.
Whenever the choice or the keys are not certain (a sweep over options, an option file that is missing, a value
left open), the override is left to Hydra.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nomad_eval.cli.suggest import load_yaml


def _find(dirs: list[Path], rel: str) -> Path | None:
    """The file a composition uses: the project's conf/ (last given) comes first, as on Hydra's search path."""
    return next((d / rel for d in reversed(dirs) if (d / rel).is_file()), None)


def _defaults(data: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """(`group@package` without `override /`, option) for each group choice of a defaults list."""
    for item in data.get("defaults") or []:
        for name, option in (item.items() if isinstance(item, dict) else []):
            yield str(name).removeprefix("override ").lstrip("/"), str(option)


def _choices(argv: list[str], dirs: list[Path], groups: set[str]) -> tuple[dict[str, tuple[str, str]], list[Any]]:
    """package -> (group, option) as composed, and the data of the experiment files, which may set keys anywhere."""
    chosen: dict[str, tuple[str, str]] = {}
    experiments = []

    def choose(name: str, option: str) -> None:
        group, _, package = name.partition("@")
        if group in groups:
            chosen[package or group] = (group, option)

    for name, option in _defaults(load_yaml(_find(dirs, "config.yaml") or Path())):
        choose(name, option)
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key.lstrip("+") == "experiment" and (path := _find(dirs, f"experiment/{value}.yaml")):
            experiments.append(load_yaml(path))
            for name, option in _defaults(experiments[-1]):
                choose(name, option)
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and not key.startswith(("+", "~")) and key.partition("@")[0] in groups:
            choose(key, value)
    return chosen, experiments


def _option_keys(dirs: list[Path], group: str, option: str, seen: set[str]) -> dict[str, Any] | None:
    """The keys an option sets, with those of the options its own defaults list names; None when unknown."""
    path = _find(dirs, f"{group}/{option}.yaml")
    if path is None or option in seen:
        return None
    seen.add(option)
    data = load_yaml(path)
    keys: dict[str, Any] = {}
    for item in data.get("defaults") or []:
        if isinstance(item, str) and item != "_self_":
            base = _option_keys(dirs, group, item, seen)
            if base is None:
                return None
            keys.update(base)
    keys.update({k: v for k, v in data.items() if k != "defaults"})
    return keys


def _missing(tree: Any, parts: list[str]) -> str | None:
    """The first part of the key path that `tree` does not have; None when it has them all or is open below."""
    for part in parts:
        if not isinstance(tree, dict) or not tree:
            return None  # a leaf's own value, or an open mapping: Hydra decides
        if part not in tree:
            return part
        tree = tree[part]
    return None


def _subtree(data: dict[str, Any], package: str) -> dict[str, Any]:
    for part in package.split("."):
        data = data.get(part) if isinstance(data.get(part), dict) else {}  # type: ignore[assignment]
    return data


def _message(dirs: list[Path], key: str, package: str, group: str, option: str, keys: dict[str, Any]) -> str:
    rest = key[len(package) + 1:]
    names = sorted(k for k in keys if k != "_target_")
    close = difflib.get_close_matches(rest.split(".")[0], names, n=1, cutoff=0.6)
    others = sorted(p.stem for d in dirs if (d / group).is_dir() for p in (d / group).glob("*.yaml")
                    if p.stem != option and rest.split(".")[0] in load_yaml(p))
    hint = f"did you mean `{package}.{close[0]}`?" if close else f"its keys: {', '.join(names)}"
    where = f"; `{rest}` is a key of {', '.join(f'{group}={o}' for o in sorted(set(others)))}" if others else ""
    choice = f"{group}={option}" if package == group else f"{group}@{package}={option}"
    return f"`{key}`: {choice} has no key `{rest}`; {hint}{where}"


def _option_problem(argv: list[str], dirs: list[Path], groups: set[str]) -> str | None:
    """`model=smollm`: an option no conf folder has, answered with the nearest one (Hydra's own error exits 1)."""
    for arg in argv:
        key, eq, value = arg.partition("=")
        group = key.lstrip("+").partition("@")[0]
        if not eq or key.startswith("~") or group not in groups or group == "hydra" or any(c in value for c in "$("):
            continue  # not a choice of a group, or one that Hydra computes (`choice(...)`, an interpolation)
        options = sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})
        for choice in (v.strip() for v in value.split(",")):
            if choice and choice not in options:
                close = difflib.get_close_matches(choice, options, n=1, cutoff=0.5)
                hint = f"did you mean `{key}={close[0]}`? " if close else ""
                return f"`{arg}`: {group} has no option `{choice}`; {hint}(options: {', '.join(options)})"
    return None


def group_key_problem(argv: list[str], conf_dirs: Iterable[Path]) -> str | None:
    """The message for the first override naming an option its group does not have, or a key the selected option
    of its group does not have; else None."""
    dirs = [d for d in conf_dirs if d.is_dir()]
    groups = {p.name for d in dirs for p in d.iterdir() if p.is_dir()}
    if (problem := _option_problem(argv, dirs, groups)) is not None:
        return problem
    chosen, experiments = _choices(argv, dirs, groups)
    for arg in argv:
        key, eq, _ = arg.partition("=")
        if not eq or key.startswith(("+", "~", "-", "hydra.")) or "/" in key or "@" in key:
            continue
        package = max((p for p in chosen if key.startswith(p + ".")), key=len, default=None)
        if package is None or "," in chosen[package][1]:
            continue  # not below a group, or a sweep over its options
        group, option = chosen[package]
        keys = _option_keys(dirs, group, option, set())
        if keys is None:
            continue
        for extra in [load_yaml(_find(dirs, "config.yaml") or Path()), *experiments]:
            keys.update(_subtree(extra, package))
        if _missing(keys, key[len(package) + 1:].split(".")) is not None:
            return _message(dirs, key, package, group, option, keys)
    return None
