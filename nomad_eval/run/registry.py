"""Every tier by name, and the module that runs it: `tier=<name>` is followed here to its code. A module is
imported only when its tier runs, so a retrieval run does not import every tier. A tier of one's own is one module
plus conf/tier/<name>.yaml whose `_target_` names its run function; the shipped tiers' YAML names the same module
as this mapping (tests/test_tiers_registry.py holds them equal)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from types import MappingProxyType

from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig

TIERS: Mapping[str, str] = MappingProxyType({
    "app": "nomad_eval.tiers.app",
    "browse": "nomad_eval.tiers.browse",
    "calibrate": "nomad_eval.tiers.calibrate",
    "compare": "nomad_eval.tiers.compare",
    "corpus": "nomad_eval.tiers.corpus",
    "dataset": "nomad_eval.tiers.dataset",
    "generation": "nomad_eval.tiers.generation",
    "labels": "nomad_eval.tiers.judge_labels",
    "matrix": "nomad_eval.tiers.matrix",
    "plan": "nomad_eval.tiers.plan",
    "position": "nomad_eval.tiers.position_curve",
    "promote": "nomad_eval.tiers.promote",
    "retrieval": "nomad_eval.tiers.retrieval",
    "synthesize": "nomad_eval.tiers.synthesize",
})

TierRun = Callable[[RunConfig], int]  # a tier's run(config) -> exit code


def tier_run(name: str, target: str | None = None) -> TierRun:
    """The run function of tier `name`: a shipped tier's `run` from TIERS, another tier's from `target` (its
    YAML's `_target_`, "package.module.function")."""
    if name in TIERS:
        run: TierRun = import_module(TIERS[name]).run
        return run
    if not target:
        raise NomadError(f"tier={name} is not one of nomad-eval's tiers ({', '.join(TIERS)}) and its "
                         f"conf/tier/{name}.yaml names no `_target_: <module>.<function>` to run", 2)
    from hydra.utils import get_method  # finds a project's own module as every other `_target_` is found

    found: TierRun = get_method(target)
    return found
