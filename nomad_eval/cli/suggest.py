"""A misspelt key or option on the command line answered with the nearest real one, before Hydra's "not in struct".

`check_argv`: a key that no config file has. The keys a command line may set are those of the primary config and of
every option of every config group (a group's option can add keys, e.g. `model=openai` adds `model.api_key`), read
from the YAML files without composing anything. An override is left to Hydra, unchecked, whenever it could be right:
`+`/`~` prefixes, `hydra.*`, group choices (`model=smollm2`), and anything below a key whose value is open (null or
a mapping that a file leaves empty). So the check only speaks when Hydra would refuse the key anyway.

`group_key_problem`: an option its group does not have (`model=smollm`), or a key that some option of its group has
but not the selected one (`tier.ks=[1,2]` is a key of tier=retrieval, not of tier=generation). The selection is
read the way Hydra composes it, from the files alone: the primary config's defaults, then each `+experiment=`
file's `override /<group>:` lines, then `<group>=<option>` on the command line. Whenever the choice or the keys
are not certain (a sweep over options, an option file that is missing, a value left open), the override is left
to Hydra.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

_OPEN = object()  # below this node any key may follow
# The settable keys: a node maps a key to a node, to a leaf's default value, or to _OPEN.
KeyTree = dict[str, object]
# Every config file is read on every start: libyaml's loader, where PyYAML was built with it, reads them several times
# faster than the pure-Python one, with the same results for safe YAML.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _merge(tree: KeyTree, node: object) -> None:
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if not isinstance(key, str) or key == "defaults":
            continue
        if isinstance(value, dict) and value:
            sub = tree.setdefault(key, {})
            if isinstance(sub, dict):
                _merge(sub, value)
        else:
            # A leaf, or an empty mapping / null that a run may fill with keys of its own (gate.fail_under).
            if key not in tree or not isinstance(tree[key], dict):
                tree[key] = _OPEN if value is None or value == {} else value


def load_yaml(path: Path) -> dict[str, object]:
    """A config file's mapping; empty when it is missing, unreadable or not a mapping (Hydra names the problem)."""
    try:
        data = yaml.load(path.read_text(), Loader=_LOADER)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _listed(v: object) -> list[object]:
    """A defaults list; anything else (a malformed file: Hydra names the problem) lists nothing to follow."""
    return v if isinstance(v, list) else []


def known_keys(conf_dirs: Iterable[Path]) -> tuple[KeyTree, set[str]]:
    """The tree of settable keys and the names of the config groups, over every conf directory given."""
    tree: KeyTree = {}
    groups: set[str] = set()
    aliases: dict[str, list[str]] = {}
    for conf in conf_dirs:
        if not conf.is_dir():
            continue
        primary = load_yaml(conf / "config.yaml")
        _merge(tree, primary)
        # `model@judge.model: smollm2` in the defaults: the model group's keys are settable under judge.model too.
        for item in _listed(primary.get("defaults")):
            for name in (item if isinstance(item, dict) else {}):
                group, at, package = str(name).partition("@")
                if at:
                    aliases.setdefault(group, []).append(package)
        for folder in sorted(p for p in conf.iterdir() if p.is_dir()):
            groups.add(folder.name)
            for option in sorted(folder.glob("*.yaml")):
                data = load_yaml(option)
                first = option.read_text(errors="replace").lstrip().splitlines()[:1]
                if first and "@package _global_" in first[0]:
                    _merge(tree, data)       # experiment files set keys anywhere
                    continue
                for package in [folder.name, *aliases.get(folder.name, [])]:
                    node: Any = tree  # a node of the tree, as _merge left it
                    for part in package.split("."):
                        node = node.setdefault(part, {})
                    _merge(node, data)
    return tree, groups


def key_paths(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every key path in a config tree with its value, nodes included."""
    if not isinstance(node, dict):
        return []
    out = []
    for k, v in node.items():
        out += [(f"{prefix}{k}", v), *key_paths(v, f"{prefix}{k}.")]
    return out


def unknown_key(override: str, tree: KeyTree, groups: set[str]) -> str | None:
    """The message for an override whose key no config file has, naming the nearest known key; else None."""
    if "=" not in override or override.startswith(("+", "~", "hydra.", "hydra/", "-")):
        return None
    key = override.split("=", 1)[0].strip()
    if not key or key in groups or "/" in key or "@" in key:
        return None
    node: Any = tree
    for part in key.split("."):
        if node is _OPEN:
            return None
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return None
    candidates = [p for p, _ in key_paths(tree)] + sorted(groups)
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"unknown key `{key}` in `{override}`{hint} (a new key needs `+{key}=...`)"


def check_argv(argv: list[str], conf_dirs: Iterable[Path]) -> str | None:
    tree, groups = known_keys(conf_dirs)
    for arg in argv:
        if arg.startswith("-"):
            continue
        message = unknown_key(arg, tree, groups)
        if message:
            return message
    return None


def _find(dirs: list[Path], rel: str) -> Path | None:
    """The file a composition uses: the project's conf/ (last given) comes first, as on Hydra's search path."""
    return next((d / rel for d in reversed(dirs) if (d / rel).is_file()), None)


def _defaults(data: Mapping[str, object]) -> Iterable[tuple[str, str]]:
    """(`group@package` without `override /`, option) for each group choice of a defaults list."""
    for item in _listed(data.get("defaults")):
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


def _option_keys(dirs: list[Path], group: str, option: str, seen: set[str]) -> dict[str, object] | None:
    """The keys an option sets, with those of the options its own defaults list names; None when unknown."""
    path = _find(dirs, f"{group}/{option}.yaml")
    if path is None or option in seen:
        return None
    seen.add(option)
    data = load_yaml(path)
    keys: dict[str, object] = {}
    for item in _listed(data.get("defaults")):
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


def _subtree(data: Mapping[str, object], package: str) -> Mapping[str, object]:
    for part in package.split("."):
        sub = data.get(part)
        data = sub if isinstance(sub, dict) else {}
    return data


def _message(dirs: list[Path], key: str, package: str, group: str, option: str, keys: Mapping[str, object]
             ) -> str:
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
    """`model=smollm`: an option no conf folder has, answered with the nearest one (Hydra's own error: exit 2 too)."""
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
