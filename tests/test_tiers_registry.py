"""The tier registry (run/registry.py) and the shipped tier YAMLs name the same code, and a tier is imported only
when it runs."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import yaml

from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import CONF
from nomad_eval.run.registry import TIERS, tier_run


def test_every_shipped_tier_yaml_names_the_registrys_module() -> None:
    shipped = {}
    for p in sorted((CONF / "tier").glob("*.yaml")):
        spec = yaml.safe_load(p.read_text(encoding="utf-8"))
        shipped[spec["name"]] = spec["_target_"]
    # A scoring tier's YAML names its measure (run in the skeleton), an action tier's its run.
    assert shipped == {name: f"{module}.{'measure' if hasattr(import_module(module), 'measure') else 'run'}"
                       for name, module in TIERS.items()}


def test_a_tier_outside_the_registry_is_found_by_its_target_or_refused() -> None:
    assert tier_run("mine", "nomad_eval.tiers.browse.run") is tier_run("browse")
    try:
        tier_run("mine", None)
    except NomadError as exc:
        assert exc.exit_code == 2 and "tier=mine" in str(exc) and "_target_" in str(exc)
    else:
        raise AssertionError("a tier with no module was not refused")


def test_running_one_tier_imports_no_other() -> None:
    code = ("import sys; from nomad_eval.run.registry import tier_run; tier_run('retrieval'); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('nomad_eval.tiers.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["nomad_eval.tiers.retrieval"]
