"""OmegaConf resolvers the config files use."""

from __future__ import annotations

import re
from pathlib import Path

from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]


def slug(text: str) -> str:
    """A readable directory name that is safe on disk and as an unquoted Hydra override value.

    `model.name-a:b/c` -> `model.name-a_b_c`: no `=` or `,` survive, so `compare.run=multirun/<sweep>/<job>`
    can name a sweep job on the command line without quoting.
    """
    out = re.sub(r"[^A-Za-z0-9._+@-]+", "_", text).strip("_")
    return out[:150] or "default"


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("nomad_repo"):
        OmegaConf.register_new_resolver("nomad_repo", lambda rel="": str(REPO / rel))
    if not OmegaConf.has_resolver("nomad_slug"):
        OmegaConf.register_new_resolver("nomad_slug", slug)
    if not OmegaConf.has_resolver("nomad_or"):
        OmegaConf.register_new_resolver("nomad_or", lambda first, fallback: first if first else fallback)
