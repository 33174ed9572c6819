"""A misspelt key on the command line answered with the nearest real one, before Hydra's "not in struct".

The keys a command line may set are those of the primary config and of every option of every config group (a
group's option can add keys, e.g. `model=openai` adds `model.api_key`), read from the YAML files without
composing anything. An override is left to Hydra, unchecked, whenever it could be right: `+`/`~` prefixes,
`hydra.*`, group choices (`model=smollm2`), and anything below a key whose value is open (null or a mapping
that a file leaves empty). So the check only speaks when Hydra would refuse the key anyway.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

_OPEN = object()  # below this node any key may follow
# Every config file is read on every start: libyaml's loader, where PyYAML was built with it, reads them several times
# faster than the pure-Python one, with the same results for safe YAML.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _merge(tree: dict[str, Any], node: Any) -> None:
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


def load_yaml(path: Path) -> dict[str, Any]:
    """A config file's mapping; empty when it is missing, unreadable or not a mapping (Hydra names the problem)."""
    try:
        data = yaml.load(path.read_text(), Loader=_LOADER)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def known_keys(conf_dirs: Iterable[Path]) -> tuple[dict[str, Any], set[str]]:
    """The tree of settable keys and the names of the config groups, over every conf directory given."""
    tree: dict[str, Any] = {}
    groups: set[str] = set()
    aliases: dict[str, list[str]] = {}
    for conf in conf_dirs:
        if not conf.is_dir():
            continue
        primary = load_yaml(conf / "config.yaml")
        _merge(tree, primary)
        # `model@judge.model: smollm2` in the defaults: the model group's keys are settable under judge.model too.
        for item in primary.get("defaults") or []:
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
                    node = tree
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


def unknown_key(override: str, tree: dict[str, Any], groups: set[str]) -> str | None:
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
