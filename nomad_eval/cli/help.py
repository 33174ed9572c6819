"""`nomad-eval --help` without Hydra: the same page, read from the config files instead of composed.

Hydra's own help composes the config and then lists every group through a fresh copy of its config repository
per group, several times the cost of the whole page's content. The page here is `hydra.help.template` from the
shipped config.yaml with its groups listed from the folders of the conf directories, in Hydra's format;
tests/cli/test_help.py holds it equal to Hydra's. Whatever this cannot render exactly (a project's own
config.yaml, a template naming more than the groups) is left to Hydra.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from pathlib import Path

import yaml

from nomad_eval.base.paths import CONF, project_dir


def config_groups(conf_dirs: Iterable[Path]) -> dict[str, set[str]]:
    """Every config group (folder of YAML files, nested as `a/b`) and its options, over the conf directories."""
    groups: dict[str, set[str]] = {}
    for conf in conf_dirs:
        if not conf.is_dir():
            continue
        for option in conf.rglob("*.yaml"):
            group = option.parent.relative_to(conf).as_posix()
            if group != "." and group.split("/")[0] != "hydra":
                groups.setdefault(group, set()).add(option.stem)
    return groups


def help_text() -> str | None:
    """The `--help` page, or None when only Hydra can render it."""
    project = project_dir() / "conf"  # on Hydra's search path before the shipped configs (cli/resolvers.py)
    if project.resolve() != CONF and (project / "config.yaml").exists():
        return None  # another primary config: its help section is Hydra's to compose
    help_cfg = (yaml.safe_load((CONF / "config.yaml").read_text()).get("hydra") or {}).get("help") or {}
    template = str(help_cfg.get("template", ""))
    for key in ("header", "footer"):
        template = template.replace(f"${{hydra.help.{key}}}", str(help_cfg.get(key, "")))
    page = string.Template(template)
    if "${" in template or set(page.get_identifiers()) != {"APP_CONFIG_GROUPS"}:
        return None
    groups = config_groups([project, CONF])
    listing = "".join(f"{g}: {', '.join(sorted(groups[g]))}\n" for g in sorted(groups))
    return page.substitute(APP_CONFIG_GROUPS=listing)
