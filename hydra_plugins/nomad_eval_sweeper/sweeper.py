"""Hydra's basic sweeper, composing each job's config once when the jobs run in this process.

Hydra composes every job twice: once to check the whole batch before any job starts, once more when the
launcher runs it. A composition costs about 0.1-0.2 s here (YAML parsing and merging), as much as a small
retrieval job's search, so in a 5-point sweep it was a fifth of the work. With the in-process basic launcher the
config checked is the config run: the launcher is handed it instead of composing it again. Other launchers
(joblib, submitit, ray) compose in their own processes and keep Hydra's behaviour.

Most sweeps vary plain values (`threshold=0.2,0.3`): such a job's config is the first job's with those values
set, because a plain `key=value` override never changes the defaults list and Hydra applies it to the composed
config as an assignment. Those jobs are derived from the first one (a copy, then Hydra's own override step and
its bookkeeping of `hydra.overrides` and `override_dirname`) in ~6 ms instead of ~100 ms, and the first one from
the sweep's own config, which Hydra composed without the swept key; anything else, a group choice, `+`/`~`, a dict
or list value or a `hydra.` key, is composed in full. tests/cli/test_sweeper.py
holds every derived config equal to Hydra's own composition.
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Sequence
from functools import cache
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType, ValueType
from hydra.core.utils import HydraContext
from hydra.types import TaskFunction
from omegaconf import DictConfig, OmegaConf

_PLAIN = (str, int, float, bool, type(None))


def _plain_change(a: Override, b: Override, first: DictConfig) -> bool:
    """Whether override b differs from a only in a plain value that Hydra assigns after composing.

    `a` may also be the sweep itself (`threshold=0.2,0.3`) when `first` is the sweep's own config: Hydra composed
    that without the sweep override, so the key holds its default there, and the job's value is assigned the same.
    """
    if not (a.key_or_group == b.key_or_group and a.package is None and b.package is None
            and a.type == b.type == OverrideType.CHANGE and not b.is_hydra_override()
            and b.value_type == ValueType.ELEMENT and isinstance(b.value(), _PLAIN)
            # A group's choice changes the defaults list; a key is a group if the first composition chose one for
            # it (it composed with the same key, so an unchosen group would have failed there).
            and b.key_or_group not in first.hydra.runtime.choices):
        return False
    if a.is_sweep_override():  # the key must be a plain value there: a group not chosen is no key of the config
        node = OmegaConf.select(first, b.key_or_group, default=None, throw_on_missing=False)
        return node is not None and not OmegaConf.is_config(node) \
            and a.value_type in (ValueType.SIMPLE_CHOICE_SWEEP, ValueType.RANGE_SWEEP)
    return a.value_type == ValueType.ELEMENT and isinstance(a.value(), _PLAIN)


@cache
def _parser() -> OverridesParser:
    return OverridesParser.create()


def _parsed(overrides: tuple[str, ...]) -> list[Override]:
    return _parser().parse_overrides(list(overrides))


def derive(first: DictConfig, first_overrides: Sequence[str], overrides: Sequence[str]) -> DictConfig | None:
    """The config Hydra composes for `overrides`, from `first` (composed for `first_overrides`), or None when
    the two differ in more than plain values. Both lists are the full ones Hydra composes with."""
    a, b = _parsed(tuple(first_overrides)), _parsed(tuple(overrides))
    if len(a) != len(b):
        return None
    changed = [(i, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.input_line != y.input_line]
    # A group left unset ("???") is skipped when Hydra composes a sweep's own config, and refused for a job.
    if any(not _plain_change(a[i], y, first) for i, y in changed) or "???" in first.hydra.runtime.choices.values():
        return None
    cfg = copy.deepcopy(first)
    ConfigLoaderImpl._apply_overrides_to_config([y for _, y in changed], cfg)
    # Hydra's bookkeeping after applying them: the task overrides as given, and the job's directory name.
    task = [o for o in b if not o.is_hydra_override()]
    cfg.hydra.overrides.task = [o.input_line for o in task]
    dirname = cfg.hydra.job.config.override_dirname
    cfg.hydra.job.override_dirname = get_overrides_dirname(overrides=task, kv_sep=dirname.kv_sep,
                                                           item_sep=dirname.item_sep,
                                                           exclude_keys=dirname.exclude_keys)
    return cfg


class ComposedOnce:
    """A config loader that returns a job's config composed at validation instead of composing it again."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._composed: dict[tuple[str, ...], DictConfig] = {}
        self._first: tuple[list[str], DictConfig] | None = None  # the batch's first full composition

    def validate(self, master_config: DictConfig, overrides: Sequence[str]) -> None:
        # Composing is the check: a bad override raises here, before any job of the batch runs. Every config is
        # made before any job runs, so the first job's run cannot change what the others are derived from.
        full = [*OmegaConf.to_container(master_config.hydra.overrides.hydra), *overrides]  # type: ignore[misc]
        if self._first is not None:
            cfg = derive(self._first[1], self._first[0], full)
        else:  # the first job from the sweep's own config, composed already (one composition less a sweep)
            own = [*full[: len(full) - len(overrides)],
                   *OmegaConf.to_container(master_config.hydra.overrides.task)]  # type: ignore[misc]
            cfg = derive(master_config, own, full)
            if cfg is not None:
                OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
                self._first = (full, copy.deepcopy(cfg))
        if cfg is None:
            cfg = self._loader.load_sweep_config(master_config, list(overrides))
            if self._first is None:
                self._first = (full, copy.deepcopy(cfg))
        else:
            OmegaConf.copy_cache(from_config=master_config, to_config=cfg)  # as load_sweep_config does
        self._composed[tuple(overrides)] = cfg

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        kept = self._composed.pop(tuple(sweep_overrides), None)
        return kept if kept is not None else self._loader.load_sweep_config(master_config, sweep_overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _settling(task: TaskFunction) -> TaskFunction:
    """The task, followed by gc.freeze() after each job of an in-process sweep.

    What outlives a job is what the next ones reuse: imported modules, the loaded models, the open store, the kept
    searches and intervals, hundreds of thousands of objects that each full collection of the next jobs would walk
    again (~50-80 ms each; a 5-job sweep met one or two more than a single run). Frozen, they are skipped, and a
    later job's collections walk only what it made. Reference counting still frees frozen objects; cyclic garbage
    alive at that moment waits for the sweep's end (NomadSweeper.sweep unfreezes), about 600 objects a job.
    """

    def run(cfg: DictConfig) -> Any:
        try:
            return task(cfg)
        finally:
            gc.freeze()

    return run


class NomadSweeper(BasicSweeper):
    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self._once: ComposedOnce | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        # Exactly the basic launcher: it composes in this process with the loader it is given.
        if type(self.launcher) is BasicLauncher:
            self._once = ComposedOnce(hydra_context.config_loader)
            self.launcher.hydra_context = HydraContext(config_loader=self._once,  # type: ignore[arg-type]
                                                       callbacks=hydra_context.callbacks)
            self.launcher.task_function = _settling(task_function)

    def sweep(self, arguments: list[str]) -> Any:
        if self._once is None:
            return super().sweep(arguments)
        from nomad_eval.harness.runtime import keep_stores_open

        # The jobs run one after another in this process: they share the opened store, closed when the sweep
        # ends (before the end-of-sweep callbacks, which may open it themselves), even if a job failed.
        try:
            with keep_stores_open():
                return super().sweep(arguments)
        finally:
            gc.unfreeze()  # what the jobs froze (_settling) is the collector's again

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        if self._once is None:
            super().validate_batch_is_legal(batch)
            return
        assert self.config is not None
        for overrides in batch:
            self._once.validate(self.config, overrides)
