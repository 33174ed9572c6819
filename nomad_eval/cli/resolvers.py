"""OmegaConf resolvers the config files use."""

from __future__ import annotations

from omegaconf import OmegaConf

from nomad_eval.base.paths import REPO, slug


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("nomad_repo"):
        OmegaConf.register_new_resolver("nomad_repo", lambda rel="": str(REPO / rel))
    if not OmegaConf.has_resolver("nomad_slug"):
        OmegaConf.register_new_resolver("nomad_slug", slug)
    if not OmegaConf.has_resolver("nomad_or"):
        OmegaConf.register_new_resolver("nomad_or", lambda first, fallback: first if first else fallback)
