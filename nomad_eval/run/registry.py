"""Every tier by name, and the module that runs it: `tier=<name>` is followed here to its code. A module is
imported only when its tier runs, so a retrieval run does not import every tier. A scoring tier's module defines
`measure(config, out) -> RunResult` and this registry runs it in the one skeleton (run/folder.py) with its view
(run/views.py); an action tier's module defines `run(config) -> exit code`. A tier of one's own is one module plus
conf/tier/<name>.yaml whose `_target_` names its `measure` (beside a `VIEW`, run/result.py) or its `run`; the
shipped tiers' YAML names the same module as this mapping (tests/test_tiers_registry.py holds them equal)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING

from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig

if TYPE_CHECKING:  # the records and the report's models load when a scoring tier runs, not for a corpus check
    from nomad_eval.run.result import Measure

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
    """The run function of tier `name`: a shipped tier's from TIERS, another tier's from `target` (its YAML's
    `_target_`, "package.module.function", naming its `measure` or its `run`)."""
    if name in TIERS:
        module = import_module(TIERS[name])
        if hasattr(module, "measure"):
            return _scoring(name, module.measure)
        run: TierRun = module.run
        return run
    if not target:
        raise NomadError(f"tier={name} is not one of nomad-eval's tiers ({', '.join(TIERS)}) and its "
                         f"conf/tier/{name}.yaml names no `_target_: <module>.measure` (or `.run`) to run", 2)
    from hydra.utils import get_method  # finds a project's own module as every other `_target_` is found

    found: Callable[..., object] = get_method(target)
    if found.__name__ == "measure":
        return _scoring(name, found)  # type: ignore[arg-type]  # a measure, by the tier protocol above
    return found  # type: ignore[return-value]


def _scoring(name: str, measure: Measure) -> TierRun:
    """`measure` in the skeleton, with the view its module defines, else the shipped tier's of that name. The
    skeleton and the views load here, when a scoring tier runs: an action tier (a corpus check) needs neither."""
    from nomad_eval.run.folder import scoring_run
    from nomad_eval.run.result import View
    from nomad_eval.run.views import VIEWS

    view = getattr(sys.modules[measure.__module__], "VIEW", None) or VIEWS.get(name)
    if not isinstance(view, View):
        raise NomadError(f"tier={name}: module {measure.__module__} defines `measure` but no `VIEW = View(...)` "
                         "(nomad_eval.run.result) saying how its report reads", 2)
    return scoring_run(measure, view)
