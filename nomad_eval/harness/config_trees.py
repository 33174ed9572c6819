"""A job's config as plain trees, converted once per job: the config check and the report both read them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

# The config of the job being run, as plain trees: unresolved, and resolved (or the error resolving raised). The
# config check and the report both need them, and each conversion walks the whole config (~6 ms); `job_trees`
# converts once per job, while the job's config stands still (run_tier: check, then run).
_job_trees: tuple[DictConfig, Any, Any] | None = None


@contextmanager
def job_trees(cfg: DictConfig) -> Iterator[None]:
    """Within this block, `config_trees(cfg)` is converted once; the block must not change `cfg`."""
    global _job_trees
    _job_trees = (cfg, *_convert(cfg))
    try:
        yield
    finally:
        _job_trees = None


def _convert(cfg: DictConfig) -> tuple[Any, Any]:
    raw = OmegaConf.to_container(cfg, resolve=False)
    try:
        return raw, OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:  # OmegaConf wraps a resolver's own failure in one of its errors
        return raw, exc


def config_trees(cfg: DictConfig) -> tuple[Any, Any]:
    """`cfg` as OmegaConf.to_container gives it unresolved, and resolved (the exception instead, when resolving
    fails). Shared: callers must not change them."""
    if _job_trees is not None and _job_trees[0] is cfg:
        return _job_trees[1], _job_trees[2]
    return _convert(cfg)
