"""A job's config as plain trees: the config check and the report both read them."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException


def config_trees(cfg: DictConfig) -> tuple[Any, Any]:
    """`cfg` as OmegaConf.to_container gives it unresolved, and resolved (the exception instead, when resolving
    fails)."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    try:
        return raw, OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:  # OmegaConf wraps a resolver's own failure in one of its errors
        return raw, exc
